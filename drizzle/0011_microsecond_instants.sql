-- Instants keep microseconds: every timestamptz(3) column of the schema becomes
-- timestamptz (6 fraction digits, PostgreSQL's full precision). Widening the
-- precision does not rewrite a table. A column used by a view cannot change
-- type, so the schema's views are dropped and recreated from their own
-- definitions (whatever views earlier migrations made), in dependency order.
DO $$
DECLARE
  names text[];
  defs text[];
  col record;
  pending int[];
  still int[];
  i int;
BEGIN
  SELECT coalesce(array_agg(c.relname ORDER BY c.oid), '{}'), coalesce(array_agg(pg_get_viewdef(c.oid) ORDER BY c.oid), '{}')
    INTO names, defs
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'straggler' AND c.relkind = 'v';
  FOR i IN 1 .. coalesce(array_length(names, 1), 0) LOOP
    EXECUTE format('DROP VIEW IF EXISTS straggler.%I CASCADE', names[i]);
  END LOOP;
  FOR col IN
    SELECT table_name, column_name FROM information_schema.columns
     WHERE table_schema = 'straggler' AND data_type = 'timestamp with time zone' AND datetime_precision < 6
  LOOP
    EXECUTE format('ALTER TABLE straggler.%I ALTER COLUMN %I TYPE timestamptz', col.table_name, col.column_name);
  END LOOP;
  -- Recreate: a view whose dependencies are not back yet waits for the next round.
  pending := ARRAY(SELECT generate_series(1, coalesce(array_length(names, 1), 0)));
  WHILE array_length(pending, 1) > 0 LOOP
    still := '{}';
    FOREACH i IN ARRAY pending LOOP
      BEGIN
        EXECUTE format('CREATE VIEW straggler.%I AS %s', names[i], defs[i]);
      EXCEPTION WHEN undefined_table THEN
        still := still || i;
      END;
    END LOOP;
    IF array_length(still, 1) = array_length(pending, 1) THEN
      RAISE EXCEPTION 'cannot recreate views %', (SELECT string_agg(names[j], ', ') FROM unnest(still) j);
    END IF;
    pending := still;
  END LOOP;
END $$;
