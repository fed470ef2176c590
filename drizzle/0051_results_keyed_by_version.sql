-- Window results keyed by results version, the live one a pointer (issue 30 item 3; BENCHMARKS.md "Issue 30,
-- round fourteen"): `window_results_table` holds the windows of every version of a pipeline, live, candidate and
-- retired, under their number; `version_window_results` (the non-live versions' copies) goes. A cutover or a
-- rollback no longer copies windows (the live ones stored, the target's put in their place: 100,795 rows four
-- times for the peers workload's 1M events, 3.9 s of a 4.1 s cutover); it moves the pointer
-- (`policy_versions.state`), so its cost is the landings and the rows whose classification differs.
--
--  * straggler.results_version(pipeline): the live version's number, 0 while the pipeline has none recorded (its
--    first micro-batch records it, src/guards/policy.ts, and its version-0 windows, if any, take that number).
--    Every statement of the stream, the correction and the read model that reads or writes the live windows names
--    `version = (SELECT straggler.results_version($1))`: one call a statement (an InitPlan), then an index key.
--  * The primary key and the two indexes lead with (pipeline, version): the finalizing UPDATE of a micro-batch
--    and a correction's reads reach the live version's rows only, however many versions are stored beside them.
--  * The read model's views are replaced in place (same columns): window_results shows the live version's rows
--    (or version 0's, before any), window_results_by_version every version's from the one table.
--
-- Rewrites window_results_table (one row per window per version: the peers workload's 1M events, 100,795 rows,
-- about a second) under an exclusive lock; bronze is not touched.
CREATE FUNCTION straggler.results_version(pipeline text) RETURNS integer LANGUAGE sql STABLE PARALLEL SAFE
  RETURN coalesce((SELECT v.version FROM straggler.policy_versions v WHERE v.pipeline = results_version.pipeline AND v.state = 'live'), 0);
--> statement-breakpoint
COMMENT ON FUNCTION straggler.results_version(text) IS 'The live results version of a pipeline (policy_versions.version), 0 while none is recorded: the version whose rows of window_results_table are live';
--> statement-breakpoint
ALTER TABLE straggler.window_results_table ADD COLUMN version integer NOT NULL DEFAULT 0;
--> statement-breakpoint
UPDATE straggler.window_results_table r SET version = v.version
  FROM straggler.policy_versions v WHERE v.pipeline = r.pipeline AND v.state = 'live';
--> statement-breakpoint
ALTER TABLE straggler.window_results_table ALTER COLUMN version DROP DEFAULT;
--> statement-breakpoint
INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count, value_sum,
  value_min, value_max, is_final, revision, corrected, last_batch_id, created_at, updated_at)
SELECT pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final,
       revision, corrected, last_batch_id, created_at, updated_at
  FROM straggler.version_window_results;
--> statement-breakpoint
ALTER TABLE straggler.window_results_table DROP CONSTRAINT "window_results_table_pipeline_group_key_window_start_window_end_pk";
--> statement-breakpoint
ALTER TABLE straggler.window_results_table ADD CONSTRAINT window_results_table_pkey
  PRIMARY KEY (pipeline, version, group_key, window_start, window_end);
--> statement-breakpoint
DROP INDEX straggler.window_results_open_end;
--> statement-breakpoint
CREATE INDEX window_results_open_end ON straggler.window_results_table (pipeline, version, window_end) WHERE NOT is_final;
--> statement-breakpoint
DROP INDEX straggler.window_results_pipeline_start;
--> statement-breakpoint
CREATE INDEX window_results_pipeline_start ON straggler.window_results_table (pipeline, version, window_start);
--> statement-breakpoint
COMMENT ON COLUMN straggler.window_results_table.version IS 'results version (policy_versions.version) the row belongs to; the live one is straggler.results_version(pipeline)';
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
                  AND l.window_start = r.window_start AND l.window_end = r.window_end) AS awaiting_correction,
       v.version AS results_version,
       v.policy_version,
       false AS held,
       r.group_key AS stored_group_key
  FROM straggler.policy_versions v
  JOIN straggler.window_results_table r ON r.pipeline = v.pipeline AND r.version = v.version
 WHERE v.state = 'live'
   AND NOT EXISTS (SELECT 1 FROM straggler.pipeline_holds h WHERE h.pipeline = r.pipeline AND h.released_at IS NULL)
UNION ALL
SELECT r.pipeline,
       straggler.key_out(r.group_key),
       r.window_start,
       r.window_end,
       r.event_count,
       r.value_sum,
       r.value_min,
       r.value_max,
       CASE WHEN r.event_count > 0 THEN r.value_sum / r.event_count END,
       CASE WHEN r.corrected THEN 'corrected' WHEN r.is_final THEN 'final' ELSE 'open' END,
       r.revision,
       r.updated_at,
       EXISTS (SELECT 1 FROM straggler.late_windows l
                WHERE l.pipeline = r.pipeline AND l.group_key = r.group_key
                  AND l.window_start = r.window_start AND l.window_end = r.window_end),
       NULL::integer,
       NULL::text,
       false,
       r.group_key
  FROM straggler.window_results_table r
 WHERE r.version = 0
   AND NOT EXISTS (SELECT 1 FROM straggler.policy_versions v WHERE v.pipeline = r.pipeline AND v.state = 'live')
   AND NOT EXISTS (SELECT 1 FROM straggler.pipeline_holds h WHERE h.pipeline = r.pipeline AND h.released_at IS NULL)
UNION ALL
SELECT pipeline, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, value_avg,
       status, revision, updated_at, awaiting_correction, results_version, policy_version, true AS held,
       straggler.key_in(group_key)
  FROM straggler.held_window_results;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.window_results_by_version AS
SELECT r.pipeline, v.version, v.state, v.policy_version,
       straggler.key_out(r.group_key) AS group_key, r.window_start, r.window_end, r.event_count, r.value_sum, r.value_min, r.value_max,
       CASE WHEN r.event_count > 0 THEN r.value_sum / r.event_count END AS value_avg,
       CASE WHEN r.corrected THEN 'corrected' WHEN r.is_final THEN 'final' ELSE 'open' END AS status,
       r.revision, r.updated_at, r.group_key AS stored_group_key
  FROM straggler.window_results_table r
  JOIN straggler.policy_versions v ON v.pipeline = r.pipeline AND v.version = r.version;
--> statement-breakpoint
DROP TABLE straggler.version_window_results;
--> statement-breakpoint
-- The version column's statistics, which the stream's plans need from the first batch on (src/db/statistics.ts
-- refreshResultsEstimate): without them the planner takes a pipeline's live windows for one row in 200.
ANALYZE straggler.window_results_table (pipeline, version);
