-- Several inputs per pipeline (docs/DESIGN.md "Several inputs"): every bronze row names the
-- input it came from (a landing folder, an HTTP producer, a log partition); rows landed
-- without one, and every row landed before inputs existed, are the input 'default'.
-- A constant default: PostgreSQL adds the column without rewriting bronze.
ALTER TABLE straggler.bronze_events ADD COLUMN input text NOT NULL DEFAULT 'default';
--> statement-breakpoint
-- Each input's event-time state, committed with the checkpoint by the batch that advanced it:
-- [{ input, maxEventTime, watermark, lastIngestionTime }] (ISO 8601): its max accepted event
-- time, its own watermark (never backwards) and the max ingestion time of its accepted rows
-- (when it last sent: idleness is measured on it). Null on a checkpoint written before inputs
-- existed: read as the default input with the checkpoint's max event time and watermark.
ALTER TABLE straggler.checkpoints ADD COLUMN inputs jsonb;
--> statement-breakpoint
-- Each batch's inputs: [{ input, maxEventTime, watermark, lastIngestionTime, idle }], the state after the batch.
ALTER TABLE straggler.batch_progress ADD COLUMN inputs jsonb;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.stream_progress AS
SELECT pipeline, batch_id, trigger, timestamp, start_offset, end_offset, num_input_rows, num_quarantined_rows,
       input_rows_per_second, processed_rows_per_second, duration_ms,
       event_time_min, event_time_max, event_time_avg, watermark, next_watermark,
       num_rows_dropped_by_watermark, num_late_windows, num_rows_updated, num_rows_finalized, num_rows_total,
       inputs
  FROM straggler.batch_progress;
