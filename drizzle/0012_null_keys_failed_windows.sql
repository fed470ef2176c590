-- The null group key and windows whose aggregate failed.
-- group_key stays text NOT NULL everywhere (plain index equality in the MERGE, the
-- correction and reconcile); the null group of a one-field key is stored as U+FFFF,
-- a text admission never lets into a key (src/core/keys.ts NULL_KEY). key_out is the
-- one SQL expression that decodes it; every read-model view shows it as NULL.
-- (correction_runs.group_keys holds the keys a run was asked for as the client named
-- them: text[] elements can be NULL, so it needs no decoding.)
CREATE FUNCTION straggler.key_out(stored text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN nullif(stored, U&'\FFFF');
--> statement-breakpoint
CREATE TABLE "straggler"."window_failures" (
	"failure_id" bigserial PRIMARY KEY NOT NULL,
	"pipeline" text NOT NULL,
	"group_key" text NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"window_end" timestamp with time zone NOT NULL,
	"phase" text NOT NULL,
	"batch_id" bigint,
	"run_id" bigint,
	"sqlstate" text NOT NULL,
	"error" text NOT NULL,
	"quarantined_rows" integer NOT NULL,
	"failed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "window_failures_pipeline" ON "straggler"."window_failures" USING btree ("pipeline","failure_id");
--> statement-breakpoint
CREATE VIEW straggler.failed_windows AS
SELECT failure_id, pipeline, straggler.key_out(group_key) AS group_key, window_start, window_end, phase, batch_id, run_id,
       sqlstate, error, quarantined_rows, failed_at
  FROM straggler.window_failures;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.window_results AS
SELECT r.pipeline,
       straggler.key_out(r.group_key) AS group_key,
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
CREATE OR REPLACE VIEW straggler.bronze AS
SELECT seq, pipeline, event_id, event_time, ingestion_time, straggler.key_out(group_key) AS group_key, value, status, reason, detail,
       policy_version, source, source_line, landed_at, raw
  FROM straggler.bronze_events;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.windows_awaiting_correction AS
SELECT pipeline, straggler.key_out(group_key) AS group_key, window_start, window_end, dropped_rows, first_batch_id, last_batch_id, registered_at
  FROM straggler.late_windows;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.correction_audit AS
SELECT run_id, pipeline, straggler.key_out(group_key) AS group_key, window_start, window_end, revision_before, revision_after,
       count_before, sum_before, min_before, max_before, count_after, sum_after, min_after, max_after,
       late_event_count, late_event_ids, corrected_at
  FROM straggler.corrections;
