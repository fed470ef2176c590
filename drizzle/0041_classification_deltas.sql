-- A cutover in time proportional to the windows, not the ledger (issue 30 item 3; src/lifecycle/cutover.ts).
-- 1. The policy a row was classified under leaves the bronze row: a landing records it
--    (landed_sources.policy_version, the landing's configured policy; a cutover restamps its landings,
--    one row per landing, instead of every bronze row). The results footprint's probe for rows accepted
--    under another policy reads the landings (src/db/sql/observe/resultsFootprint.ts). Landings that wrote
--    no bronze row (a replay's file marker) keep null.
ALTER TABLE straggler.landed_sources ADD COLUMN policy_version text;
--> statement-breakpoint
UPDATE straggler.landed_sources l
   SET policy_version = (SELECT b.policy_version FROM straggler.bronze_events b WHERE b.seq = l.first_seq AND b.pipeline = l.pipeline LIMIT 1)
 WHERE l.first_seq IS NOT NULL;
--> statement-breakpoint
-- The bronze view without the column (a view's column can only go with the view: DROP, so a user's
-- view on it stops this migration by name, src/db/migrate.ts), as 0039 made it, with its comments.
DROP VIEW straggler.bronze;
--> statement-breakpoint
CREATE VIEW straggler.bronze AS
SELECT b.seq, b.pipeline, b.event_id, b.event_time, b.ingestion_time, straggler.key_out(b.group_key) AS group_key, b.value, b.status, b.reason, b.detail,
       (SELECT s.name FROM straggler.bronze_sources s WHERE s.id = b.source_id) AS source, b.source_line, b.landed_at,
       straggler.bronze_raw(b.raw, b.raw_rest, b.source_id, b.event_id, b.event_time, b.ingestion_time, b.group_key, b.value) AS raw
  FROM straggler.bronze_events b;
--> statement-breakpoint
COMMENT ON VIEW straggler.bronze IS 'Bronze: every landed record of each pipeline, accepted or quarantined with its reason, with its raw text as received';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.seq IS 'the landing order: a sequence number unique across pipelines, increasing with each landing''s commit';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.pipeline IS 'the pipeline the record landed in';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.event_id IS 'the record''s event id (as given, or derived)';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.event_time IS 'event time; NULL when none could be read (quarantined)';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.ingestion_time IS 'ingestion time (arrival)';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.group_key IS 'the group key (one key field: its text; several: the JSON array of their values; none: the empty string); NULL is the null group';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.value IS 'the value aggregated (exact numeric); NULL when the record has none';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.status IS 'accepted or quarantined';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.reason IS 'quarantine reason; NULL when accepted';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.detail IS 'for a quarantined row, what was wrong, in words (NULL for accepted rows)';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.source IS 'the source the record came from: a file name, an HTTP request (http:<id> or its Idempotency-Key), a replay span (replay:<id>:<span start>), a log position';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.source_line IS 'the record''s 1-based line (or record) number within its source';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.landed_at IS 'when it landed in bronze';
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze.raw IS 'the record''s text exactly as received (stored, or given back by its columns: docs/concepts-and-semantics.md "The raw record")';
--> statement-breakpoint
-- Migrations run in journal order (src/db/migrate.ts applies a skipped one before the later ones), so
-- bronze is partitioned here.
ALTER TABLE straggler.bronze_events DROP COLUMN policy_version;
--> statement-breakpoint
-- 2. A stored version's classification is kept as its difference from bronze's (the live one's):
--    `differs` marks the rows whose (status, reason, detail, event_time, group_key, value) differ from
--    bronze's; a row of the version's checkpoint range that it does not hold is bronze's. A cutover
--    writes only the marked rows (read through the partial index). Rows stored before this migration
--    are marked: a cutover to them writes what really differs, as before.
ALTER TABLE straggler.event_classifications ADD COLUMN differs boolean DEFAULT true NOT NULL;
--> statement-breakpoint
CREATE INDEX event_classifications_differs ON straggler.event_classifications (pipeline, version, seq) WHERE differs;
