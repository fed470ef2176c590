-- A leaner bronze: each index kept for the statements it serves, the rest narrowed or replaced
-- (BENCHMARKS.md "Lean bronze: indexes"; measured on the peers workload, 300,000 events of one
-- pipeline over 7 days, bytes per event as the replay leaves them, plans by EXPLAIN ANALYZE).
--
--  * Event-id dedupe probe (src/db/sql/dedupeLanding.ts): (event_id) WHERE status = 'accepted'
--    instead of (event_id, pipeline, seq). The probe's pipeline and seq conditions are checked on
--    the heap row the index points to; a landed row with a new event id finds only itself (one
--    heap fetch of the page it was just written to), a duplicate finds its earlier version.
--    68.3 -> 38.3 B per event; a landing of 300,000 new event ids, and one of 300,000 duplicates,
--    ran as fast within the noise.
--  * Event-time range reads (collectTargets.ts, compareFinalWindows.ts, listBronzeWindows.ts,
--    sessionSpans.ts, the lateness report): BRIN (event_time) instead of btree (pipeline,
--    event_time). Bronze is in landing order and event time follows it up to the lateness, so a
--    range of 128 pages spans a few hours of event time: a day's range read 1,664 pages for the
--    about 1,340 that hold its rows, against 1,550 by the btree (a reconcile of that day read 3,014
--    buffers against 88,501). 31.3 -> 0.2 B per event. A pipeline's range read also reads the
--    pages of the other pipelines that landed at the same time.
--  * Correction's per-window read (recomputeTargets.ts, sessionRecompute.ts, supersededWindows.ts,
--    sessionSpans.ts): (pipeline, group_key, event_time) INCLUDE (value, seq) WHERE status =
--    'accepted'. Every reader of it asks for accepted rows only, so status leaves the entries and
--    quarantined rows leave the index; the read stays an index-only scan (same plan; a day's
--    13,692 windows read 44,363 buffers against 44,328). 119.4 -> 104.0 B per event.
--  * Kept: the primary key (seq, landed_at) and (pipeline, seq). The landing's statements read
--    their own rows by the primary-key range seq > $2 with `pipeline || ''` (a plan no statistics
--    can change, dedupeLanding.ts), the highest seq before a landing is max(seq) over all pipelines,
--    and the seq look-ups of late events and supersessions (writeAudit.ts, readLateSeqs.ts,
--    sessionRecompute.ts, supersededWindows.ts, addTargetsOfRows.ts) are primary-key probes.
--    (pipeline, seq) serves the stream's micro-batch reads, backlog and ledger counts, the
--    rebuild's pages and holds by one pipeline's seq range, which the primary key would serve only
--    by reading every pipeline's rows of that range.
--  Bronze with its indexes: 538.4 -> 462.2 B per event (heap 256 B unchanged).
--
-- Indexes on the partitioned table: CREATE INDEX on bronze_events makes one on every partition
-- (and on every partition attached later), DROP INDEX drops them. The new indexes are built
-- first, under a SHARE lock (reads go on, landings wait: seconds per million rows); the old ones
-- are dropped last, so the ACCESS EXCLUSIVE lock that DROP takes (reads wait too) is held only
-- from the drops to the commit. The new covering index is built under a temporary name and
-- takes the old one's name after the drop.
-- A database where migration 0023 was skipped (applied after this one by src/db/migrate.ts)
-- still has an unpartitioned bronze here: it is left as it is, and 0023 then makes its own index
-- set, which serves every statement as before.
DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass) <> 'p' THEN
    RETURN;
  END IF;
  CREATE INDEX bronze_events_accepted_event_id ON straggler.bronze_events USING btree (event_id) WHERE status = 'accepted';
  CREATE INDEX bronze_events_event_time_brin ON straggler.bronze_events USING brin (event_time);
  CREATE INDEX bronze_events_pipeline_key_event_time_0028 ON straggler.bronze_events USING btree (pipeline, group_key, event_time) INCLUDE (value, seq) WHERE status = 'accepted';
  DROP INDEX straggler.bronze_events_accepted_event_id_seq;
  DROP INDEX straggler.bronze_events_pipeline_event_time;
  DROP INDEX straggler.bronze_events_pipeline_key_event_time;
  ALTER INDEX straggler.bronze_events_pipeline_key_event_time_0028 RENAME TO bronze_events_pipeline_key_event_time;
END $$;
