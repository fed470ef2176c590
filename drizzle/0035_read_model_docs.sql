-- The read model documents itself and serves key filters from an index (issue 29 item 4;
-- docs/operations.md "Read model for dashboards").
-- * key_in: the inverse of key_out (a key as a client names it, NULL = the null group, to its
--   stored text). IMMUTABLE, so `straggler.key_in('JFK')` is folded to a constant at plan time.
-- * Every view showing group_key gains stored_group_key, the column as stored, at the end (CREATE
--   OR REPLACE VIEW may only append columns): `WHERE stored_group_key = straggler.key_in($1)`
--   reaches the base table's (pipeline, group_key, ...) index, where `WHERE group_key = $1` on
--   key_out(group_key) cannot. Views are replaced in place, so a view of a user's that reads one
--   of them stays (no DROP: test/integration/readModelDocs.test.ts, and no CASCADE in any later
--   migration: test/unit/migrationsLint.test.ts).
-- * COMMENT ON every view and every column a dashboard reads (psql \d+, any SQL client).
-- bronze keeps its definition here: only some of its columns are commented. Where 0023 was skipped
-- and is applied after this one (src/db/migrate.ts applySkippedMigrations), the views 0023
-- (re)creates have no comments.
CREATE FUNCTION straggler.key_in(key text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN coalesce(key, U&'\FFFF');
--> statement-breakpoint
COMMENT ON FUNCTION straggler.key_out(text) IS 'A stored group key as shown: the null group (stored as U+FFFF) becomes NULL, every other key is unchanged';
--> statement-breakpoint
COMMENT ON FUNCTION straggler.key_in(text) IS 'A group key as shown (NULL = the null group) to its stored text, for filters on stored_group_key that use the index: WHERE stored_group_key = straggler.key_in(''JFK'')';
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
  FROM straggler.window_results_table r
  LEFT JOIN straggler.policy_versions v ON v.pipeline = r.pipeline AND v.state = 'live'
 WHERE NOT EXISTS (SELECT 1 FROM straggler.pipeline_holds h WHERE h.pipeline = r.pipeline AND h.released_at IS NULL)
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
  JOIN straggler.policy_versions v ON v.pipeline = r.pipeline AND v.state = 'live'
UNION ALL
SELECT r.pipeline, v.version, v.state, v.policy_version,
       straggler.key_out(r.group_key), r.window_start, r.window_end, r.event_count, r.value_sum, r.value_min, r.value_max,
       CASE WHEN r.event_count > 0 THEN r.value_sum / r.event_count END,
       CASE WHEN r.corrected THEN 'corrected' WHEN r.is_final THEN 'final' ELSE 'open' END,
       r.revision, r.updated_at, r.group_key
  FROM straggler.version_window_results r
  JOIN straggler.policy_versions v ON v.pipeline = r.pipeline AND v.version = r.version AND v.state <> 'live';
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.windows_awaiting_correction AS
SELECT pipeline, straggler.key_out(group_key) AS group_key, window_start, window_end, dropped_rows, first_batch_id, last_batch_id, registered_at,
       group_key AS stored_group_key
  FROM straggler.late_windows;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.correction_audit AS
SELECT run_id, pipeline, straggler.key_out(group_key) AS group_key, window_start, window_end, revision_before, revision_after,
       count_before, sum_before, min_before, max_before, count_after, sum_after, min_after, max_after,
       late_event_count, late_event_ids, corrected_at, reconcile_run_id, group_key AS stored_group_key
  FROM straggler.corrections;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.failed_windows AS
SELECT failure_id, pipeline, straggler.key_out(group_key) AS group_key, window_start, window_end, phase, batch_id, run_id,
       sqlstate, error, quarantined_rows, failed_at, group_key AS stored_group_key
  FROM straggler.window_failures;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.rebuild_diff AS
SELECT pipeline, version, against_version, change, straggler.key_out(group_key) AS group_key, window_start, window_end,
       before_count, before_sum, before_min, before_max, after_count, after_sum, after_min, after_max, group_key AS stored_group_key
  FROM straggler.rebuild_window_changes;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.retractions AS
SELECT id, pipeline, straggler.key_out(group_key) AS group_key, window_start, window_end,
       event_count, value_sum, value_min, value_max, revision, was_final, reason, batch_id, run_id,
       replaced_by_start, replaced_by_end, retracted_at, group_key AS stored_group_key
  FROM straggler.session_retractions;
--> statement-breakpoint
DO $comments$
DECLARE
  stored constant text := 'the group key as stored (the null group is U+FFFF): filter on it with straggler.key_in(key) to use the index, e.g. WHERE pipeline = ''p'' AND stored_group_key = straggler.key_in(''JFK'')';
  shown constant text := 'the group key (one key field: its text; several: the JSON array of their values; none: the empty string); NULL is the null group';
  c record;
BEGIN
  -- [view, column (NULL: the view itself), comment]
  FOR c IN SELECT * FROM (VALUES
    ('window_results', NULL, 'Gold: one row per window and group key of each pipeline, the current aggregates with their status; while the pipeline is held, what was published when the hold began'),
    ('window_results', 'pipeline', 'pipeline name (pipelines.yaml)'),
    ('window_results', 'group_key', shown),
    ('window_results', 'window_start', 'window start, inclusive (event time)'),
    ('window_results', 'window_end', 'window end, exclusive (event time)'),
    ('window_results', 'event_count', 'accepted events in the window'),
    ('window_results', 'value_sum', 'sum of the events'' values (exact numeric); NULL when no event has a value'),
    ('window_results', 'value_min', 'least value (exact numeric); NULL when no event has a value'),
    ('window_results', 'value_max', 'greatest value (exact numeric); NULL when no event has a value'),
    ('window_results', 'value_avg', 'value_sum / event_count (exact numeric); NULL without events'),
    ('window_results', 'status', 'open (the watermark has not passed the window end: may still change), final (passed: changes only by a correction), corrected (changed by a correction run)'),
    ('window_results', 'revision', 'version of the row: 1 when created, +1 at each change'),
    ('window_results', 'updated_at', 'when the row last changed (transaction time)'),
    ('window_results', 'awaiting_correction', 'true when the window dropped late events that a correction run has not yet recovered (see windows_awaiting_correction)'),
    ('window_results', 'results_version', 'the live results version of the pipeline (results_versions.version); NULL before its first micro-batch'),
    ('window_results', 'policy_version', 'that version''s policy version (hash of the policy), as stamped on the bronze rows landed under it'),
    ('window_results', 'held', 'true while the pipeline is held: the row is what was published when the hold began (holds)'),
    ('window_results', 'stored_group_key', stored),

    ('window_results_by_version', NULL, 'Every results version''s windows, live, candidate and retired (rebuild, cut over, roll back)'),
    ('window_results_by_version', 'pipeline', 'pipeline name'),
    ('window_results_by_version', 'version', 'results version (results_versions.version)'),
    ('window_results_by_version', 'state', 'the version''s state: live, candidate or retired'),
    ('window_results_by_version', 'policy_version', 'policy version (hash) the version was built with'),
    ('window_results_by_version', 'group_key', shown),
    ('window_results_by_version', 'window_start', 'window start, inclusive (event time)'),
    ('window_results_by_version', 'window_end', 'window end, exclusive (event time)'),
    ('window_results_by_version', 'event_count', 'accepted events in the window'),
    ('window_results_by_version', 'value_sum', 'sum of the values (exact numeric); NULL when no event has a value'),
    ('window_results_by_version', 'value_min', 'least value; NULL when no event has a value'),
    ('window_results_by_version', 'value_max', 'greatest value; NULL when no event has a value'),
    ('window_results_by_version', 'value_avg', 'value_sum / event_count; NULL without events'),
    ('window_results_by_version', 'status', 'open, final or corrected (as in window_results)'),
    ('window_results_by_version', 'revision', 'version of the row: 1 when created, +1 at each change'),
    ('window_results_by_version', 'updated_at', 'when the row last changed'),
    ('window_results_by_version', 'stored_group_key', stored),

    ('windows_awaiting_correction', NULL, 'Windows that dropped late events (behind the watermark) and await a correction run'),
    ('windows_awaiting_correction', 'pipeline', 'pipeline name'),
    ('windows_awaiting_correction', 'group_key', shown),
    ('windows_awaiting_correction', 'window_start', 'window start, inclusive (event time)'),
    ('windows_awaiting_correction', 'window_end', 'window end, exclusive (event time)'),
    ('windows_awaiting_correction', 'dropped_rows', 'late rows dropped into the window so far'),
    ('windows_awaiting_correction', 'first_batch_id', 'micro-batch that first dropped a row into it'),
    ('windows_awaiting_correction', 'last_batch_id', 'micro-batch that last dropped a row into it'),
    ('windows_awaiting_correction', 'registered_at', 'when the window was first registered'),
    ('windows_awaiting_correction', 'stored_group_key', stored),

    ('correction_audit', NULL, 'One row per window a correction run changed: the aggregates before and after'),
    ('correction_audit', 'run_id', 'correction run (correction_history.run_id)'),
    ('correction_audit', 'pipeline', 'pipeline name'),
    ('correction_audit', 'group_key', shown),
    ('correction_audit', 'window_start', 'window start, inclusive (event time)'),
    ('correction_audit', 'window_end', 'window end, exclusive (event time)'),
    ('correction_audit', 'revision_before', 'the row''s revision before the run; NULL when the run created it'),
    ('correction_audit', 'revision_after', 'the row''s revision after the run'),
    ('correction_audit', 'count_before', 'event_count before; NULL when the run created the row'),
    ('correction_audit', 'sum_before', 'value_sum before'),
    ('correction_audit', 'min_before', 'value_min before'),
    ('correction_audit', 'max_before', 'value_max before'),
    ('correction_audit', 'count_after', 'event_count after'),
    ('correction_audit', 'sum_after', 'value_sum after'),
    ('correction_audit', 'min_after', 'value_min after'),
    ('correction_audit', 'max_after', 'value_max after'),
    ('correction_audit', 'late_event_count', 'late events the run recovered into the window'),
    ('correction_audit', 'late_event_ids', 'their event ids'),
    ('correction_audit', 'corrected_at', 'when the run changed the window'),
    ('correction_audit', 'reconcile_run_id', 'the reconcile run whose mismatch caused this change; NULL otherwise'),
    ('correction_audit', 'stored_group_key', stored),

    ('correction_history', NULL, 'One row per correction run'),
    ('correction_history', 'run_id', 'run id'),
    ('correction_history', 'pipeline', 'pipeline name'),
    ('correction_history', 'trigger', 'what started the run: cron, api or cli'),
    ('correction_history', 'cron_slot', 'the schedule''s slot for a cron run; NULL otherwise'),
    ('correction_history', 'range_start', 'start of the requested event-time range (inclusive); NULL without one'),
    ('correction_history', 'range_end', 'end of the requested event-time range (exclusive); NULL without one'),
    ('correction_history', 'group_keys', 'the keys the run was asked for (an element NULL = the null group); NULL = every key'),
    ('correction_history', 'status', 'running, succeeded, failed, or abandoned (its lease expired before it finished: its changes were rolled back)'),
    ('correction_history', 'bronze_snapshot', 'bronze seq the run read up to: the stream checkpoint''s when it started'),
    ('correction_history', 'windows_examined', 'windows the run recomputed'),
    ('correction_history', 'windows_changed', 'windows whose aggregates changed (correction_audit rows)'),
    ('correction_history', 'events_recovered', 'late events recovered into the results'),
    ('correction_history', 'started_at', 'when the run started'),
    ('correction_history', 'finished_at', 'when it finished; NULL while running'),
    ('correction_history', 'duration_ms', 'run time, ms'),
    ('correction_history', 'error', 'why it failed or was abandoned; NULL otherwise'),
    ('correction_history', 'lease_until', 'until when the running process holds the run (renewed as it works)'),

    ('stream_progress', NULL, 'One row per micro-batch, in the terms of Spark''s StreamingQueryProgress'),
    ('stream_progress', 'pipeline', 'pipeline name'),
    ('stream_progress', 'batch_id', 'micro-batch id, 1, 2, ... per pipeline'),
    ('stream_progress', 'trigger', 'what ran the batch: interval, once, available-now, replay or notify'),
    ('stream_progress', 'timestamp', 'when the batch started'),
    ('stream_progress', 'start_offset', 'last bronze seq before the batch (exclusive)'),
    ('stream_progress', 'end_offset', 'last bronze seq of the batch (inclusive)'),
    ('stream_progress', 'num_input_rows', 'accepted bronze rows in the batch''s range (the stream''s input)'),
    ('stream_progress', 'num_quarantined_rows', 'quarantined bronze rows in the batch''s range'),
    ('stream_progress', 'input_rows_per_second', 'input rows / seconds since the previous batch; NULL for the first'),
    ('stream_progress', 'processed_rows_per_second', 'input rows / batch duration'),
    ('stream_progress', 'duration_ms', 'batch duration, ms'),
    ('stream_progress', 'event_time_min', 'least event time of the batch''s accepted rows'),
    ('stream_progress', 'event_time_max', 'greatest event time of the batch''s accepted rows'),
    ('stream_progress', 'event_time_avg', 'mean event time of the batch''s accepted rows'),
    ('stream_progress', 'watermark', 'watermark the batch ran with (max event time seen before it - delay)'),
    ('stream_progress', 'next_watermark', 'watermark after the batch (the next batch''s)'),
    ('stream_progress', 'num_rows_dropped_by_watermark', 'late (event, window) pairs the batch dropped: rows behind the watermark, left to corrections'),
    ('stream_progress', 'num_late_windows', 'windows that dropped late rows in the batch'),
    ('stream_progress', 'num_rows_updated', 'windows the batch MERGEd into the results'),
    ('stream_progress', 'num_rows_finalized', 'windows the batch made final'),
    ('stream_progress', 'num_rows_total', 'open (not final) windows after the batch: Spark''s state rows'),
    ('stream_progress', 'inputs', 'each input''s state after the batch (jsonb array); NULL for batches run before inputs were tracked'),

    ('quarantine', NULL, 'Quarantined bronze rows with their reason: landed, kept, never aggregated'),
    ('quarantine', 'seq', 'bronze sequence number'),
    ('quarantine', 'pipeline', 'pipeline name'),
    ('quarantine', 'event_id', 'the record''s event id (as given, or derived)'),
    ('quarantine', 'reason', 'why it was quarantined: MALFORMED, MISSING_KEY, NULL_TS, PARSE_FAIL, FUTURE_TS, TOO_OLD, INVALID_VALUE, DUPLICATE or AMENDED_DUPLICATE'),
    ('quarantine', 'detail', 'what was wrong, in words'),
    ('quarantine', 'event_time', 'event time, when one could be read'),
    ('quarantine', 'ingestion_time', 'ingestion time (arrival)'),
    ('quarantine', 'source', 'source it came from (file, request, stdin, replay, log)'),
    ('quarantine', 'source_line', 'its line (record number) in the source'),
    ('quarantine', 'landed_at', 'when it landed in bronze'),
    ('quarantine', 'raw', 'the record as received'),

    ('bronze', 'event_id', 'the record''s event id (as given, or derived)'),
    ('bronze', 'event_time', 'event time; NULL when none could be read (quarantined)'),
    ('bronze', 'ingestion_time', 'ingestion time (arrival)'),
    ('bronze', 'group_key', shown),
    ('bronze', 'value', 'the value aggregated (exact numeric); NULL when the record has none'),
    ('bronze', 'status', 'accepted or quarantined'),
    ('bronze', 'reason', 'quarantine reason; NULL when accepted'),
    ('bronze', 'landed_at', 'when it landed in bronze'),

    ('ledger', NULL, 'Rows per pipeline: landed, accepted, quarantined, archived partitions included'),
    ('ledger', 'pipeline', 'pipeline name'),
    ('ledger', 'landed', 'rows landed in bronze'),
    ('ledger', 'accepted', 'of those, accepted'),
    ('ledger', 'quarantined', 'of those, quarantined'),

    ('sources', NULL, 'Every source (file, request, stdin, replay micro-batch, log) and what became of it'),
    ('sources', 'pipeline', 'pipeline name'),
    ('sources', 'source', 'source name: a file name, http:..., stdin:..., replay:..., nats:...'),
    ('sources', 'kind', 'file, http, stdin, replay or nats'),
    ('sources', 'state', 'landed; for files also refused, changed_after_landing or waiting_to_settle'),
    ('sources', 'reason', 'why it was refused or not landed; NULL otherwise'),
    ('sources', 'size_bytes', 'file size, bytes; NULL for other kinds'),
    ('sources', 'mtime', 'file modification time; NULL for other kinds'),
    ('sources', 'sha256', 'SHA-256 (hex) of what was landed'),
    ('sources', 'rows', 'records landed from it'),
    ('sources', 'accepted', 'of those, accepted'),
    ('sources', 'quarantined', 'of those, quarantined'),
    ('sources', 'landed_bytes', 'bytes of the file landed; NULL for other kinds'),
    ('sources', 'first_seen', 'when it was first seen'),
    ('sources', 'last_seen', 'when it was last seen'),
    ('sources', 'state_since', 'when it entered its state'),
    ('sources', 'landed_at', 'when it landed; NULL when it has not'),

    ('failed_windows', NULL, 'Windows whose aggregate failed with a data exception; their rows were quarantined'),
    ('failed_windows', 'failure_id', 'failure id'),
    ('failed_windows', 'pipeline', 'pipeline name'),
    ('failed_windows', 'group_key', shown),
    ('failed_windows', 'window_start', 'window start, inclusive (event time)'),
    ('failed_windows', 'window_end', 'window end, exclusive (event time)'),
    ('failed_windows', 'phase', 'stream or correction'),
    ('failed_windows', 'batch_id', 'micro-batch that failed it (phase stream); NULL otherwise'),
    ('failed_windows', 'run_id', 'correction run that failed it (phase correction); NULL otherwise'),
    ('failed_windows', 'sqlstate', 'PostgreSQL error code (e.g. 22003 numeric value out of range)'),
    ('failed_windows', 'error', 'PostgreSQL error message'),
    ('failed_windows', 'quarantined_rows', 'rows quarantined for it'),
    ('failed_windows', 'failed_at', 'when it failed'),
    ('failed_windows', 'stored_group_key', 'the group key as stored (the null group is U+FFFF): compare it with straggler.key_in(key)'),

    ('retractions', NULL, 'Session rows removed from the results (extended or merged by the stream, replaced by a correction run), in the order removed: follow it by id'),
    ('retractions', 'id', 'retraction id, increasing in the order rows were removed'),
    ('retractions', 'pipeline', 'pipeline name'),
    ('retractions', 'group_key', shown),
    ('retractions', 'window_start', 'the removed session''s start (event time)'),
    ('retractions', 'window_end', 'the removed session''s end (event time)'),
    ('retractions', 'event_count', 'its event_count'),
    ('retractions', 'value_sum', 'its value_sum'),
    ('retractions', 'value_min', 'its value_min'),
    ('retractions', 'value_max', 'its value_max'),
    ('retractions', 'revision', 'its revision when removed'),
    ('retractions', 'was_final', 'whether it was final when removed'),
    ('retractions', 'reason', 'why it was removed: extended, merged (by the stream) or corrected (by a correction run)'),
    ('retractions', 'batch_id', 'micro-batch that removed it; NULL for a correction run'),
    ('retractions', 'run_id', 'correction run that removed it; NULL for the stream'),
    ('retractions', 'replaced_by_start', 'start of the session that replaced it; NULL when none did'),
    ('retractions', 'replaced_by_end', 'end of the session that replaced it; NULL when none did'),
    ('retractions', 'retracted_at', 'when it was removed'),
    ('retractions', 'stored_group_key', stored),

    ('holds', NULL, 'Every hold of a pipeline: while one is open, window_results serves what was published when it began'),
    ('holds', 'hold_id', 'hold id'),
    ('holds', 'pipeline', 'pipeline name'),
    ('holds', 'reason', 'why it was held, in words'),
    ('holds', 'rule', 'the guard rule that tripped (onFutureTs, quarantineShare); NULL when held by hand'),
    ('holds', 'tripped_by', 'the rows that tripped the rule (jsonb); NULL when held by hand'),
    ('holds', 'batch_id', 'micro-batch at which it was held'),
    ('holds', 'held_at', 'when the hold began'),
    ('holds', 'released_at', 'when it was released; NULL while held'),

    ('results_versions', NULL, 'Each pipeline''s results versions with the policy each was built with'),
    ('results_versions', 'pipeline', 'pipeline name'),
    ('results_versions', 'version', 'results version, 1, 2, ... per pipeline'),
    ('results_versions', 'state', 'live (served by window_results), candidate (a rebuild) or retired'),
    ('results_versions', 'policy_version', 'policy version: hash of the policy'),
    ('results_versions', 'policy', 'the policy the version was built with (jsonb)'),
    ('results_versions', 'created_at', 'when the version was created'),
    ('results_versions', 'live_since', 'when it last became live; NULL when it never was'),

    ('rebuild_diff', NULL, 'Each rebuild''s windows against the live version it was built beside'),
    ('rebuild_diff', 'pipeline', 'pipeline name'),
    ('rebuild_diff', 'version', 'the rebuilt (candidate) version'),
    ('rebuild_diff', 'against_version', 'the live version it was compared with'),
    ('rebuild_diff', 'change', 'added, removed or changed'),
    ('rebuild_diff', 'group_key', shown),
    ('rebuild_diff', 'window_start', 'window start, inclusive (event time)'),
    ('rebuild_diff', 'window_end', 'window end, exclusive (event time)'),
    ('rebuild_diff', 'before_count', 'event_count in the live version; NULL when added'),
    ('rebuild_diff', 'before_sum', 'value_sum in the live version'),
    ('rebuild_diff', 'before_min', 'value_min in the live version'),
    ('rebuild_diff', 'before_max', 'value_max in the live version'),
    ('rebuild_diff', 'after_count', 'event_count in the rebuilt version; NULL when removed'),
    ('rebuild_diff', 'after_sum', 'value_sum in the rebuilt version'),
    ('rebuild_diff', 'after_min', 'value_min in the rebuilt version'),
    ('rebuild_diff', 'after_max', 'value_max in the rebuilt version'),
    ('rebuild_diff', 'stored_group_key', stored),

    ('rebuild_reclassified', NULL, 'Each rebuild''s rows whose classification changed'),
    ('rebuild_reclassified', 'pipeline', 'pipeline name'),
    ('rebuild_reclassified', 'version', 'the rebuilt version'),
    ('rebuild_reclassified', 'before_reason', 'classification in the live version: accepted, SUPERSEDED or the quarantine reason'),
    ('rebuild_reclassified', 'after_reason', 'classification in the rebuilt version'),
    ('rebuild_reclassified', 'rows', 'rows so reclassified'),

    ('amendments', NULL, 'Each event version superseded under admission.dedupe: latest, both versions side by side'),
    ('amendments', 'pipeline', 'pipeline name'),
    ('amendments', 'event_id', 'the event id both versions share'),
    ('amendments', 'reason', 'SUPERSEDED'),
    ('amendments', 'superseded_seq', 'bronze seq of the older version'),
    ('amendments', 'superseding_seq', 'bronze seq of the version that replaced it'),
    ('amendments', 'old_event_time', 'event time of the older version'),
    ('amendments', 'old_group_key', 'group key of the older version; NULL is the null group'),
    ('amendments', 'old_value', 'value of the older version'),
    ('amendments', 'new_event_time', 'event time of the newer version'),
    ('amendments', 'new_group_key', 'group key of the newer version; NULL is the null group'),
    ('amendments', 'new_value', 'value of the newer version'),
    ('amendments', 'old_source', 'source of the older version'),
    ('amendments', 'new_source', 'source of the newer version'),
    ('amendments', 'recorded_at', 'when the supersession was recorded'),

    ('archived_rows', NULL, 'Bronze rows moved out by archive (and not restored), counted per partition, pipeline, status and reason'),
    ('archived_rows', 'partition', 'the archived bronze partition'),
    ('archived_rows', 'pipeline', 'pipeline name'),
    ('archived_rows', 'status', 'accepted or quarantined'),
    ('archived_rows', 'reason', 'quarantine reason; NULL when accepted'),
    ('archived_rows', 'rows', 'rows archived'),
    ('archived_rows', 'min_event_time', 'least event time among them'),
    ('archived_rows', 'max_event_time', 'greatest event time among them')
  ) AS t(v, col, text) LOOP
    -- archived_rows is 0023's: absent where 0023 was skipped by an earlier migrate and comes after this one.
    CONTINUE WHEN to_regclass(format('straggler.%I', c.v)) IS NULL;
    IF c.col IS NULL THEN
      EXECUTE format('COMMENT ON VIEW straggler.%I IS %L', c.v, c.text);
    ELSE
      EXECUTE format('COMMENT ON COLUMN straggler.%I.%I IS %L', c.v, c.col, c.text);
    END IF;
  END LOOP;
END
$comments$;
