-- Bronze's two widest indexes narrowed (issue 30 item 2; BENCHMARKS.md "Issue 30, round thirteen"). The peers
-- workload, 300,000 events landed in 171 spans, bytes per event as the replay leaves them:
--
--  * The event-id index holds a 64-bit hash of the id, `hashtextextended(event_id, 0)`, instead of the id's text:
--    38.3 -> 28.3 B (an 8-byte key, where a text key of 8 or more bytes is padded to 16). Every probe names both the
--    hash and the id (src/db/sql/fragments/eventIdHash.ts): the index finds the candidates, the heap row's event_id
--    decides, so two ids with one hash cost a heap visit and never a wrong answer. The dedupe's reads are all
--    equality, which is all the index serves.
--  * The primary key (pipeline, seq, landed_at) becomes the plain index (pipeline, seq): 36.7 -> 28.5 B. A unique
--    index of a partitioned table must hold its partition key (landed_at, 8 bytes an entry) and the key's only
--    writer is bronze's sequence; the one path that writes a seq it did not draw, a restore of an archive, checks
--    first that none of the archive's seqs is in bronze (src/db/sql/retention/restoreRows.ts). Every reader by
--    seq still names its pipeline, and this is still the only index that leads with pipeline (see 0038).
--
-- The new indexes are built first (SHARE lock: reads go on, landings wait), the old ones dropped last; each
-- partition's btrees then fill their leaf pages (0048). A bronze that 0023 has not partitioned yet is left as it
-- is, as 0038 leaves it.
DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass) <> 'p' THEN
    RETURN;
  END IF;
  CREATE INDEX bronze_events_accepted_event_id_hash ON straggler.bronze_events USING btree ((hashtextextended(event_id, 0))) WHERE status = 'accepted';
  CREATE INDEX bronze_events_pipeline_seq ON straggler.bronze_events USING btree (pipeline, seq);
  DROP INDEX IF EXISTS straggler.bronze_events_accepted_event_id;
  ALTER TABLE straggler.bronze_events DROP CONSTRAINT IF EXISTS bronze_events_pipeline_seq_landed_at_pk;
  PERFORM straggler.fill_bronze_indexes(inhrelid::regclass) FROM pg_inherits WHERE inhparent = 'straggler.bronze_events'::regclass;
END $$;
