-- Bronze's two widest indexes narrowed (issue 30 item 2; BENCHMARKS.md "Issue 30, round thirteen"); the peers
-- workload replayed (171 spans) leaves 200.2 B per event at 300k events (226.8 before), 197.2 at 1M (230.7):
--
--  * The event-id index holds two 4-byte keys of the id instead of its text, (straggler.event_id_high(event_id),
--    straggler.event_id_low(event_id)): an 8-byte entry where a text key of 8 or more bytes takes 16. The high key
--    is PostgreSQL's `hashtext` of the id without its last 4 characters, the low key those 4 characters' codes, so
--    that ids made by a counter (which differ in their last characters) fall into runs of up to 10,000 that share
--    the high key and are inserted in order within it: the pages of a run fill as the right edge of a (key, time)
--    index does (fill factor 97, the rest for the run's late ids), where a hash of the whole id sent each insert to
--    a page anywhere in the index, half full and, once the index outgrew shared_buffers, read back for almost every
--    row. 10M peers ids inserted in landing order, 171 statements, one index (shared_buffers 128 MB): the text
--    28.1 / 29.2 / 27.8 s, 503 MB; `hashtextextended(event_id, 0)` 64.5 / 63.9 s, 267 MB; one int8 of
--    hashtext(prefix) and hashtext(id) 23.2 / 23.7 s, 276 MB; the two keys 26.2 s, 261 MB at fill factor 100. The
--    peers workload's 1M ids (1 % late) alone: text 38 B per event, the int8 28.4, the two keys 39.9 at 100, 21.6 at
--    95, 21.1 at 97, 21.5 at 98. Every probe names both keys and the id (src/db/sql/fragments/eventIdKey.ts): the
--    index finds the candidates, the heap row's event_id decides, so two ids with the same keys cost a heap visit
--    and never a wrong answer. The dedupe's reads are all equality, which is all the index serves. (`hashtext` is
--    the function PostgreSQL's hash indexes on text keep on disk; were a major version to change it, REINDEX.)
--  * The primary key (pipeline, seq, landed_at) becomes the plain index (pipeline, seq): 36.7 -> 28.5 B. A unique
--    index of a partitioned table must hold its partition key (landed_at, 8 bytes an entry) and the key's only
--    writer is bronze's sequence; the one path that writes a seq it did not draw, a restore of an archive, checks
--    first that none of the archive's seqs is in bronze (src/db/sql/retention/restoreRows.ts). Every reader by
--    seq still names its pipeline, and this is still the only index that leads with pipeline (see 0038).
--  * The correction's (group_key, event_time) index keeps 3 % of a leaf page free (fill factor 97, 0048 gave it 100):
--    each key's rows arrive in event-time order and split its right edge at the fill factor, and a late event
--    lands inside its key's range; at 100 every such insert split a full page in two halves, at 97 it finds room.
--    The peers workload (1 % late) replayed, B per event at 1M / 300k events: 100: 38.9 / 33.8; 98: 30.2 / 33.7;
--    97: 30.4 / 33.0; 95: 30.9 / 33.3 (bronze's rows inserted again in landing order at 1M, 90: 32.8, 85: 35.9).
--    The (pipeline, seq) index keeps 100: it grows only at its right edge.
--
-- The new indexes are built first (SHARE lock: reads go on, landings wait; 1.45 s for a 1M-event bronze), the old
-- ones dropped last; each partition's btrees then get their fill factors (the pages split from now on). A bronze
-- that 0023 has not partitioned yet is left as it is, as 0038 leaves it.
CREATE FUNCTION straggler.event_id_high(id text) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT hashtext(left(id, -4))
$$;
--> statement-breakpoint
-- The codes of the last 4 characters, the last in the low byte (an id of fewer has zeros before); a code past 255
-- spills into its neighbours' bits, which only makes two such ids share the key.
CREATE FUNCTION straggler.event_id_low(id text) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (ascii(substr(id, length(id) - 3, 1)) << 24) | (ascii(substr(id, length(id) - 2, 1)) << 16)
       | (ascii(substr(id, length(id) - 1, 1)) << 8) | ascii(substr(id, length(id), 1))
$$;
--> statement-breakpoint
DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass) <> 'p' THEN
    RETURN;
  END IF;
  CREATE INDEX bronze_events_accepted_event_key ON straggler.bronze_events USING btree (straggler.event_id_high(event_id), straggler.event_id_low(event_id)) WHERE status = 'accepted';
  CREATE INDEX bronze_events_pipeline_seq ON straggler.bronze_events USING btree (pipeline, seq);
  DROP INDEX IF EXISTS straggler.bronze_events_accepted_event_id;
  ALTER TABLE straggler.bronze_events DROP CONSTRAINT IF EXISTS bronze_events_pipeline_seq_landed_at_pk;
END $$;
--> statement-breakpoint
-- 0048's function, given the fill factor of the two indexes that leave room for late events (the correction index
-- and the event-id index: a partition's indexes attached to bronze_events_key_event_time and
-- bronze_events_accepted_event_key), 97 unless told; the (pipeline, seq) index gets 100. ensure_bronze_partition
-- calls it for every partition it makes, once attached; `straggler compact` calls it with 100 before it rebuilds a
-- closed month, which takes no insert (src/db/sql/retention/compactPartitions.ts).
DROP FUNCTION straggler.fill_bronze_indexes(regclass);
--> statement-breakpoint
CREATE FUNCTION straggler.fill_bronze_indexes(partition regclass, late_room_fill integer DEFAULT 97) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  ix regclass;
  fill integer;
  n integer := 0;
BEGIN
  FOR ix, fill IN
    SELECT i.indexrelid::regclass,
           CASE WHEN EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid
                              AND h.inhparent IN (to_regclass('straggler.bronze_events_key_event_time'),
                                                  to_regclass('straggler.bronze_events_accepted_event_key'))) THEN late_room_fill ELSE 100 END
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
     WHERE i.indrelid = partition AND a.amname = 'btree' LOOP
    EXECUTE format('ALTER INDEX %s SET (fillfactor = %s)', ix, fill);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
--> statement-breakpoint
SELECT straggler.fill_bronze_indexes(inhrelid::regclass) FROM pg_inherits WHERE inhparent = 'straggler.bronze_events'::regclass;
