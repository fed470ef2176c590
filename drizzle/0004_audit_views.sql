-- Read model for the correction job's runs and audit trail.
CREATE VIEW straggler.correction_history AS
SELECT run_id, pipeline, trigger, cron_slot, range_start, range_end, group_keys, status, bronze_snapshot,
       windows_examined, windows_changed, events_recovered, started_at, finished_at, duration_ms, error
  FROM straggler.correction_runs;
--> statement-breakpoint
CREATE VIEW straggler.correction_audit AS
SELECT run_id, pipeline, group_key, window_start, window_end, revision_before, revision_after,
       count_before, sum_before, min_before, max_before, count_after, sum_after, min_after, max_after,
       late_event_count, late_event_ids, corrected_at
  FROM straggler.corrections;
