-- The read model for dashboards: views over the private tables, stable names.
CREATE VIEW straggler.window_results AS
SELECT r.pipeline,
       r.group_key,
       r.window_start,
       r.window_end,
       r.event_count,
       r.value_sum,
       r.value_min,
       r.value_max,
       CASE WHEN r.event_count > 0 THEN r.value_sum / r.event_count END AS value_avg,
       CASE WHEN r.corrected THEN 'corrected' WHEN r.is_final THEN 'final' ELSE 'open' END AS status,
       r.revision,
       r.updated_at,
       EXISTS (SELECT 1 FROM straggler.late_windows l
                WHERE l.pipeline = r.pipeline AND l.group_key = r.group_key
                  AND l.window_start = r.window_start AND l.window_end = r.window_end) AS awaiting_correction
  FROM straggler.window_results_table r;
--> statement-breakpoint
CREATE VIEW straggler.bronze AS
SELECT seq, pipeline, event_id, event_time, ingestion_time, group_key, value, status, reason, detail,
       policy_version, source, source_line, landed_at, raw
  FROM straggler.bronze_events;
--> statement-breakpoint
CREATE VIEW straggler.quarantine AS
SELECT seq, pipeline, event_id, reason, detail, event_time, ingestion_time, source, source_line, landed_at, raw
  FROM straggler.bronze_events
 WHERE status = 'quarantined';
--> statement-breakpoint
CREATE VIEW straggler.stream_progress AS
SELECT pipeline, batch_id, trigger, timestamp, start_offset, end_offset, num_input_rows, num_quarantined_rows,
       input_rows_per_second, processed_rows_per_second, duration_ms,
       event_time_min, event_time_max, event_time_avg, watermark, next_watermark,
       num_rows_dropped_by_watermark, num_late_windows, num_rows_updated, num_rows_finalized, num_rows_total
  FROM straggler.batch_progress;
--> statement-breakpoint
CREATE VIEW straggler.windows_awaiting_correction AS
SELECT pipeline, group_key, window_start, window_end, dropped_rows, first_batch_id, last_batch_id, registered_at
  FROM straggler.late_windows;
--> statement-breakpoint
CREATE VIEW straggler.ledger AS
SELECT pipeline,
       count(*) AS landed,
       count(*) FILTER (WHERE status = 'accepted') AS accepted,
       count(*) FILTER (WHERE status = 'quarantined') AS quarantined
  FROM straggler.bronze_events
 GROUP BY pipeline;
