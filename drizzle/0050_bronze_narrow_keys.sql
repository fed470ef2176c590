-- Bronze's two widest indexes narrowed (issue 30 item 2; BENCHMARKS.md "Issue 30, round thirteen"). The peers
-- workload, 300,000 events landed in 171 spans, bytes per event as the replay leaves them:
--
--  * The event-id index holds a 64-bit key of the id, `straggler.event_id_key(event_id)`, instead of the id's text:
--    an 8-byte key where a text key of 8 or more bytes takes 16. The key is PostgreSQL's `hashtext` of the id
--    without its last 4 characters in its high 32 bits and of the whole id in its low 32: ids that differ only in
--    their last characters (a counter's) share the high bits and are inserted into the same few leaf pages, as
--    their text was; a hash of the whole id sends each insert to a page anywhere in the index, which once the
--    index is larger than shared_buffers is read back for almost every row. 10M peers ids inserted in landing
--    order, 171 statements, one index (shared_buffers 128 MB): the text 28.1 / 29.2 / 27.8 s, 503 MB; this key
--    23.7 s, 276 MB; `hashtextextended(event_id, 0)` 64.5 / 63.9 s, 267 MB. In bronze, peers workload: 300k
--    38.3 -> about 28 B per event, 1M about 31. Every probe names the key and the id
--    (src/db/sql/fragments/eventIdKey.ts): the index finds the candidates, the heap row's event_id decides, so two
--    ids with one key cost a heap visit and never a wrong answer. The dedupe's reads are all equality, which is
--    all the index serves. (`hashtext` is the function PostgreSQL's own hash indexes keep on disk across upgrades.)
--  * The primary key (pipeline, seq, landed_at) becomes the plain index (pipeline, seq): 36.7 -> 28.5 B. A unique
--    index of a partitioned table must hold its partition key (landed_at, 8 bytes an entry) and the key's only
--    writer is bronze's sequence; the one path that writes a seq it did not draw, a restore of an archive, checks
--    first that none of the archive's seqs is in bronze (src/db/sql/retention/restoreRows.ts). Every reader by
--    seq still names its pipeline, and this is still the only index that leads with pipeline (see 0038).
--  * The correction's (group_key, event_time) index keeps 5 % of a leaf page free (fillfactor 95, 0048 gave it 100):
--    each key's rows arrive in event-time order and split its right edge at the fill factor, and a late event
--    lands inside its key's range; at 100 every such insert split a full page in two halves, at 95 it finds room.
--    Peers workload (1 % late) in landing order: 1M events 38.9 -> 30.9 B, 300k 33.8 -> 33.1 (90: 32.8 and 34.3;
--    85: 35.9 at 1M). The other btrees keep 100: the (pipeline, seq) index grows only at its right edge, the
--    event-id key's pages split in halves where a key lands between others, whatever their fill.
--
-- The new indexes are built first (SHARE lock: reads go on, landings wait), the old ones dropped last; each
-- partition's btrees then get their fill factors (the pages split from now on). A bronze that 0023 has not partitioned yet is left as it
-- is, as 0038 leaves it.
CREATE FUNCTION straggler.event_id_key(id text) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (hashtext(left(id, -4))::bigint << 32) | (hashtext(id)::bigint & 4294967295)
$$;
--> statement-breakpoint
DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass) <> 'p' THEN
    RETURN;
  END IF;
  CREATE INDEX bronze_events_accepted_event_key ON straggler.bronze_events USING btree (straggler.event_id_key(event_id)) WHERE status = 'accepted';
  CREATE INDEX bronze_events_pipeline_seq ON straggler.bronze_events USING btree (pipeline, seq);
  DROP INDEX IF EXISTS straggler.bronze_events_accepted_event_id;
  ALTER TABLE straggler.bronze_events DROP CONSTRAINT IF EXISTS bronze_events_pipeline_seq_landed_at_pk;
END $$;
--> statement-breakpoint
-- 0048's function: 95 for the correction index (a partition's index attached to bronze_events_key_event_time), 100
-- for the other btrees. ensure_bronze_partition calls it for every partition it makes, once attached.
CREATE OR REPLACE FUNCTION straggler.fill_bronze_indexes(partition regclass) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  ix regclass;
  fill integer;
  n integer := 0;
BEGIN
  FOR ix, fill IN
    SELECT i.indexrelid::regclass,
           CASE WHEN EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid
                              AND h.inhparent = to_regclass('straggler.bronze_events_key_event_time')) THEN 95 ELSE 100 END
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
     WHERE i.indrelid = partition AND a.amname = 'btree' LOOP
    EXECUTE format('ALTER INDEX %s SET (fillfactor = %s)', ix, fill);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
--> statement-breakpoint
SELECT straggler.fill_bronze_indexes(inhrelid::regclass) FROM pg_inherits WHERE inhparent = 'straggler.bronze_events'::regclass;
--> statement-breakpoint
-- A closed month takes no insert: `straggler compact` packs every btree of it full before its rebuild
-- (src/db/sql/retention/compactPartitions.ts), the correction index too.
CREATE FUNCTION straggler.pack_bronze_indexes(partition regclass) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  ix regclass;
  n integer := 0;
BEGIN
  FOR ix IN SELECT i.indexrelid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
             WHERE i.indrelid = partition AND a.amname = 'btree' LOOP
    EXECUTE format('ALTER INDEX %s SET (fillfactor = 100)', ix);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
