-- A bronze row whose ingestion time is its landing's stores none (issue 30 item 2; BENCHMARKS.md "Issue 30, round
-- fifteen"): the landing's ingestion time goes once in its source's record (`bronze_sources.ingestion_time`) and
-- the row's `ingestion_time` is NULL, which every reader takes as the source's. A replay's span, an HTTP request, a
-- file and a log partition's batch are each one source landed once (`landed_sources` keeps one record a source),
-- so the rows of one source that carry no ingestion time of their own (no `fields.ingestionTime`, no log
-- timestamp) share it. Rows that carry their own keep it, as do rows landed before this migration and restored
-- rows.
--
-- The row loses 8 bytes of an 8-aligned column: on the peers workload 117.0 -> 109.3 bytes of heap per event
-- (70 -> 75 rows a page). Catalog changes only: no table is rewritten or scanned (the new column's default is
-- evaluated once).
--
-- Every source record holds a time, so that a row's ingestion time is never missing: a landing records its own;
-- a source recorded otherwise (by `straggler.bronze_source_id` for a row written by hand, by a restore, or before
-- this migration, which records its own time for them without rewriting the table) takes the time it is recorded
-- at, and a row written by hand without an ingestion time has that one. Rows that store their own are unaffected.
-- A source's time is one of its rows' raw columns: a trigger refuses to change it, as bronze_raw_unchanged does
-- for the rows' own.
ALTER TABLE straggler.bronze_sources ADD COLUMN ingestion_time timestamptz NOT NULL DEFAULT now();
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze_sources.ingestion_time IS 'The ingestion time of the source''s rows that store none (bronze_events.ingestion_time NULL): its landing''s; for a source recorded otherwise (by hand, by a restore, before migration 0053) the time it was recorded at. Never changes';
--> statement-breakpoint
CREATE FUNCTION straggler.bronze_source_time_unchanged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.ingestion_time IS DISTINCT FROM OLD.ingestion_time THEN
    RAISE EXCEPTION 'bronze source % of pipeline %: its ingestion time (the one its rows that store none have) never changes', OLD.name, OLD.pipeline
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER bronze_source_time_unchanged BEFORE UPDATE OF ingestion_time ON straggler.bronze_sources
  FOR EACH ROW EXECUTE FUNCTION straggler.bronze_source_time_unchanged();
--> statement-breakpoint
ALTER TABLE straggler.bronze_events ALTER COLUMN ingestion_time DROP NOT NULL;
--> statement-breakpoint
COMMENT ON COLUMN straggler.bronze_events.ingestion_time IS 'The row''s ingestion time; NULL: its source''s (bronze_sources.ingestion_time, migration 0053)';
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.bronze AS
SELECT b.seq, b.pipeline, b.event_id, b.event_time, coalesce(b.ingestion_time, s.ingestion_time) AS ingestion_time,
       straggler.key_out(b.group_key) AS group_key, b.value, b.status, b.reason, b.detail,
       s.name AS source, b.source_line, b.landed_at,
       straggler.bronze_raw(b.raw, b.raw_rest, b.raw_at, b.source_id, b.event_id, b.event_time, b.ingestion_time, b.group_key, b.value) AS raw
  FROM straggler.bronze_events b LEFT JOIN straggler.bronze_sources s ON s.id = b.source_id;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.quarantine AS
SELECT b.seq, b.pipeline, b.event_id, b.reason, b.detail, b.event_time, coalesce(b.ingestion_time, s.ingestion_time) AS ingestion_time,
       s.name AS source, b.source_line, b.landed_at,
       straggler.bronze_raw(b.raw, b.raw_rest, b.raw_at, b.source_id, b.event_id, b.event_time, b.ingestion_time, b.group_key, b.value) AS raw
  FROM straggler.bronze_events b LEFT JOIN straggler.bronze_sources s ON s.id = b.source_id
 WHERE b.status = 'quarantined';
--> statement-breakpoint
-- A row's raw text by its source's layout (0052) reads the source's record already: a NULL ingestion time is the
-- source's, taken there. Every reader of the raw text (the views, the rebuild, the archive, the trigger that keeps
-- the raw columns unchanged) passes the row's columns as stored.
CREATE OR REPLACE FUNCTION straggler.bronze_raw(raw text, raw_rest text, raw_at timestamptz, source_id bigint, event_id text, event_time timestamptz, ingestion_time timestamptz, group_key text, value numeric)
RETURNS text LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  layout text;
  it timestamptz;
BEGIN
  IF raw IS NOT NULL THEN
    RETURN raw;
  END IF;
  SELECT h.raw_layout, coalesce(bronze_raw.ingestion_time, s.ingestion_time) INTO layout, it
    FROM straggler.bronze_sources s JOIN straggler.source_headers h ON h.pipeline = s.pipeline AND h.source = s.name
   WHERE s.id = bronze_raw.source_id;
  RETURN straggler.raw_of_layout(layout, raw_rest, raw_at, event_id, event_time, it, group_key, value);
END $$;
