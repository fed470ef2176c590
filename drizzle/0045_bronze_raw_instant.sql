-- One more field a CSV row's columns give back (issue 30 item 2; BENCHMARKS.md "Issue 30, round ten"):
-- a field no column holds whose text is an instant exactly as straggler.instant_text writes one (ISO 8601
-- UTC, 3 fraction digits, or 6 when its microseconds within the millisecond are not 0, a four-digit year
-- from 1000) is kept as a timestamptz in raw_at (8 bytes) instead of as text in raw_rest (25 bytes and
-- its share of the row's alignment: the peers workload's arrival time). Layout letter a, at most one per
-- layout (src/ingest/rawLayout.ts checks each row at landing by the same rules, so the text read back is
-- always the text received); the layouts recorded before keep their meaning.
ALTER TABLE straggler.bronze_events ADD COLUMN raw_at timestamptz;
--> statement-breakpoint
-- A row's raw text from its columns by a source's layout; NULL when a column the layout names is NULL.
CREATE FUNCTION straggler.raw_of_layout(layout text, rest text, at timestamptz, event_id text, event_time timestamptz, ingestion_time timestamptz, group_key text, value numeric)
RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN bool_and(p IS NOT NULL) THEN string_agg(p, ',' ORDER BY o) END
    FROM (SELECT o, CASE c WHEN 'e' THEN event_id
                           WHEN 't' THEN straggler.instant_text(event_time)
                           WHEN 'i' THEN straggler.instant_text(ingestion_time)
                           WHEN 'a' THEN straggler.instant_text(at)
                           WHEN 'k' THEN group_key
                           WHEN 'v' THEN value::text
                           -- string_to_array('', ',') is an empty array: a lone x field that is empty
                           WHEN 'x' THEN CASE WHEN rest = '' THEN '' ELSE (string_to_array(rest, ','))[xn] END END AS p
            FROM (SELECT c, o, sum((c = 'x')::int) OVER (ORDER BY o) AS xn
                    FROM unnest(string_to_array(layout, NULL)) WITH ORDINALITY AS l(c, o)) letters) parts
$$;
--> statement-breakpoint
-- A bronze row's raw text as received: its own, or the one its columns reproduce by its source's layout.
CREATE FUNCTION straggler.bronze_raw(raw text, raw_rest text, raw_at timestamptz, source_id bigint, event_id text, event_time timestamptz, ingestion_time timestamptz, group_key text, value numeric)
RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(raw, (SELECT straggler.raw_of_layout(h.raw_layout, raw_rest, raw_at, event_id, event_time, ingestion_time, group_key, value)
                          FROM straggler.bronze_sources s JOIN straggler.source_headers h ON h.pipeline = s.pipeline AND h.source = s.name
                         WHERE s.id = bronze_raw.source_id))
$$;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.bronze AS
SELECT b.seq, b.pipeline, b.event_id, b.event_time, b.ingestion_time, straggler.key_out(b.group_key) AS group_key, b.value, b.status, b.reason, b.detail,
       (SELECT s.name FROM straggler.bronze_sources s WHERE s.id = b.source_id) AS source, b.source_line, b.landed_at,
       straggler.bronze_raw(b.raw, b.raw_rest, b.raw_at, b.source_id, b.event_id, b.event_time, b.ingestion_time, b.group_key, b.value) AS raw
  FROM straggler.bronze_events b;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.quarantine AS
SELECT b.seq, b.pipeline, b.event_id, b.reason, b.detail, b.event_time, b.ingestion_time,
       (SELECT s.name FROM straggler.bronze_sources s WHERE s.id = b.source_id) AS source, b.source_line, b.landed_at,
       straggler.bronze_raw(b.raw, b.raw_rest, b.raw_at, b.source_id, b.event_id, b.event_time, b.ingestion_time, b.group_key, b.value) AS raw
  FROM straggler.bronze_events b
 WHERE b.status = 'quarantined';
--> statement-breakpoint
-- The raw columns never change (raw_at is one of them), with the one exception of 0039: a row written
-- without its text may get the text its columns reproduce.
CREATE OR REPLACE FUNCTION straggler.bronze_raw_unchanged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.seq IS DISTINCT FROM OLD.seq OR NEW.pipeline IS DISTINCT FROM OLD.pipeline OR NEW.event_id IS DISTINCT FROM OLD.event_id
     OR (NEW.raw IS DISTINCT FROM OLD.raw
         AND (OLD.raw IS NOT NULL
              OR NEW.raw IS DISTINCT FROM straggler.bronze_raw(NULL, OLD.raw_rest, OLD.raw_at, OLD.source_id, OLD.event_id, OLD.event_time, OLD.ingestion_time, OLD.group_key, OLD.value)))
     OR NEW.raw_rest IS DISTINCT FROM OLD.raw_rest OR NEW.raw_at IS DISTINCT FROM OLD.raw_at
     OR NEW.ingestion_time IS DISTINCT FROM OLD.ingestion_time OR NEW.source_id IS DISTINCT FROM OLD.source_id
     OR NEW.source_line IS DISTINCT FROM OLD.source_line OR NEW.landed_at IS DISTINCT FROM OLD.landed_at THEN
    RAISE EXCEPTION 'bronze row % of pipeline %: the raw columns (seq, pipeline, event_id, raw, raw_rest, raw_at, ingestion_time, source_id, source_line, landed_at) never change', OLD.seq, OLD.pipeline
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
DROP TRIGGER bronze_raw_unchanged ON straggler.bronze_events;
--> statement-breakpoint
CREATE TRIGGER bronze_raw_unchanged BEFORE UPDATE OF seq, pipeline, event_id, raw, raw_rest, raw_at, ingestion_time, source_id, source_line, landed_at
  ON straggler.bronze_events FOR EACH ROW EXECUTE FUNCTION straggler.bronze_raw_unchanged();
--> statement-breakpoint
DROP FUNCTION straggler.bronze_raw(text, text, bigint, text, timestamptz, timestamptz, text, numeric);
--> statement-breakpoint
DROP FUNCTION straggler.raw_of_layout(text, text, text, timestamptz, timestamptz, text, numeric);
