-- Bronze's btree indexes fill their leaf pages (fillfactor 100, not the default 90) on every partition, those made
-- from now on and those already made (issue 30 item 2; BENCHMARKS.md "Issue 30, round eleven"). A partition's rows
-- arrive in landing order: the primary key (pipeline, seq, landed_at) only ever grows at its right edge and the
-- (group_key, event_time) index at each key's right edge, so the tenth of each leaf page the default keeps free
-- is never used (a late event lands inside its key's range, where a page splits whatever its fill). Peers
-- workload, 300k rows in landing order: the primary key 40.6 → 36.7 B per event, the correction's index 34.2 → 33.5.
-- The setting applies to the pages split from now on; `straggler compact` rebuilds a closed month at it.
CREATE FUNCTION straggler.fill_bronze_indexes(partition regclass) RETURNS integer LANGUAGE plpgsql AS $$
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
--> statement-breakpoint
SELECT straggler.fill_bronze_indexes(inhrelid::regclass) FROM pg_inherits WHERE inhparent = 'straggler.bronze_events'::regclass;
--> statement-breakpoint
-- 0023's function, its indexes filled once attached.
CREATE OR REPLACE FUNCTION straggler.ensure_bronze_partition(name text, lo timestamptz, hi timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass(format('straggler.%I', name)) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE straggler.%I (LIKE straggler.bronze_events INCLUDING DEFAULTS)', name);
  EXECUTE format('ALTER TABLE straggler.%I ADD CONSTRAINT %I CHECK (landed_at >= %L AND landed_at < %L)', name, name || '_bounds', lo, hi);
  IF EXISTS (SELECT 1 FROM straggler.bronze_events_default WHERE landed_at >= lo AND landed_at < hi) THEN
    EXECUTE format('WITH moved AS (DELETE FROM straggler.bronze_events_default WHERE landed_at >= %L AND landed_at < %L RETURNING *)
                    INSERT INTO straggler.%I SELECT * FROM moved', lo, hi, name);
  END IF;
  EXECUTE format('ALTER TABLE straggler.bronze_events ATTACH PARTITION straggler.%I FOR VALUES FROM (%L) TO (%L)', name, lo, hi);
  EXECUTE format('ALTER TABLE straggler.%I DROP CONSTRAINT %I', name, name || '_bounds');
  PERFORM straggler.fill_bronze_indexes(format('straggler.%I', name)::regclass);
  RETURN true;
END $$;
