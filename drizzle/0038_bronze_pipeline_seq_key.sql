-- Bronze with one index fewer and a narrower correction index (BENCHMARKS.md "Issue 30, round
-- five"; the peers workload, 300,000 events, bytes per event as the replay leaves them):
--
--  * The primary key becomes (pipeline, seq, landed_at) and replaces both (seq, landed_at) and
--    (pipeline, seq). Every reader by seq names its pipeline: the landing's own rows
--    (pipeline = $1 AND seq > $2, the highest seq before the landing read per pipeline under the
--    pipeline's append lock), the micro-batch, backlog and ledger counts, the rebuild's pages,
--    holds, and the seq look-ups of late events and supersessions. 31.6 + 31.6 -> about 41 B.
--  * The correction's per-window read (recomputeTargets.ts, sessionRecompute.ts,
--    supersededWindows.ts, sessionSpans.ts) uses (group_key, event_time) WHERE status =
--    'accepted' instead of (pipeline, group_key, event_time) INCLUDE (value, seq): the read now
--    visits the heap row for the value and checks the pipeline there (a window's rows of one key
--    are a few rows on a few pages). 104 -> about 60 B. No index on bronze leads with pipeline
--    but the primary key, so no statistics can send a pipeline's seq range to another index.
--
-- The new indexes are built first (SHARE lock: reads go on, landings wait), the old ones dropped
-- last. A database where migration 0023 was skipped (applied after this one by src/db/migrate.ts)
-- still has an unpartitioned bronze here: it is left as it is, and 0023 then makes its own index
-- set, which serves every statement (each names its pipeline and seq range).
DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass) <> 'p' THEN
    RETURN;
  END IF;
  CREATE INDEX bronze_events_key_event_time ON straggler.bronze_events USING btree (group_key, event_time) WHERE status = 'accepted';
  ALTER TABLE straggler.bronze_events DROP CONSTRAINT bronze_events_seq_landed_at_pk;
  ALTER TABLE straggler.bronze_events ADD CONSTRAINT bronze_events_pipeline_seq_landed_at_pk PRIMARY KEY (pipeline, seq, landed_at);
  DROP INDEX straggler.bronze_events_pipeline_seq;
  DROP INDEX straggler.bronze_events_pipeline_key_event_time;
END $$;
