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
DROP VIEW straggler.bronze;
--> statement-breakpoint
CREATE VIEW straggler.bronze AS
SELECT seq, pipeline, event_id, event_time, ingestion_time, straggler.key_out(group_key) AS group_key, value, status, reason, detail,
       source, source_line, landed_at, raw
  FROM straggler.bronze_events;
--> statement-breakpoint
-- A database whose earlier migrate skipped 0023 (src/db/migrate.ts) gets 0023 after this one: its
-- bronze is not partitioned yet, and 0023 copies it column for column into the partitioned table,
-- which keeps the column (nullable, unused) there.
DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass) = 'p' THEN
    ALTER TABLE straggler.bronze_events DROP COLUMN policy_version;
  ELSE
    ALTER TABLE straggler.bronze_events ALTER COLUMN policy_version DROP NOT NULL;
  END IF;
END $$;
--> statement-breakpoint
-- 2. A stored version's classification is kept as its difference from bronze's (the live one's):
--    `differs` marks the rows whose (status, reason, detail, event_time, group_key, value) differ from
--    bronze's; a row of the version's checkpoint range that it does not hold is bronze's. A cutover
--    writes only the marked rows (read through the partial index). Rows stored before this migration
--    are marked: a cutover to them writes what really differs, as before.
ALTER TABLE straggler.event_classifications ADD COLUMN differs boolean DEFAULT true NOT NULL;
--> statement-breakpoint
CREATE INDEX event_classifications_differs ON straggler.event_classifications (pipeline, version, seq) WHERE differs;
