-- Each late (event, window) pair names its event's id (issue 30 item 5; BENCHMARKS.md "Issue 30, round eleven"): the
-- correction's audit lists the late events that changed a window by their ids, and read each from bronze by its
-- seq, one primary-key probe of a cold heap page a late event (at 10M events 9,738 probes, 18,000 pages read). The
-- stream has the id in hand as it reads the batch (src/db/sql/stream/readBatch.ts) and writes it with the pair.
-- The pairs recorded before take theirs from bronze here; one whose bronze row is gone (archived) keeps none, and
-- the audit does not count it (as its join with bronze did not).
ALTER TABLE straggler.late_events ADD COLUMN event_id text;
--> statement-breakpoint
UPDATE straggler.late_events l SET event_id = b.event_id
  FROM straggler.bronze_events b WHERE b.pipeline = l.pipeline AND b.seq = l.seq;
