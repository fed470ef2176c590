-- Bronze keeps a row's raw text only when its parsed columns do not reproduce it (BENCHMARKS.md
-- "Issue 30, round five"; docs/concepts-and-semantics.md "The raw record"). A CSV source whose
-- header is recorded also records a layout (source_headers.raw_layout): one letter per column,
-- e = event_id, t = event_time, i = ingestion_time, k = group_key, v = value, x = a field no
-- column holds, kept in raw_rest (the x fields in order, joined by commas). At landing, an
-- accepted row whose raw text is exactly those texts, in that order, joined by commas, is
-- written with raw NULL; the landing checks this row by row with the same rules as
-- straggler.raw_of_layout below (src/ingest/rawLayout.ts), and any other row keeps its text.
-- Every reader of the raw text reads straggler.bronze_raw(...): the views, the rebuild's pages,
-- the archive (so an archive file holds every raw line as received).
ALTER TABLE straggler.bronze_events ALTER COLUMN raw DROP NOT NULL;
--> statement-breakpoint
ALTER TABLE straggler.bronze_events ADD COLUMN raw_rest text;
--> statement-breakpoint
ALTER TABLE straggler.source_headers ADD COLUMN raw_layout text;
--> statement-breakpoint
-- An instant as the landing writes it (src/core/timestamps.ts formatInstant): ISO 8601 UTC, 3
-- fraction digits when its microseconds within the millisecond are 0, else 6.
CREATE FUNCTION straggler.instant_text(t timestamptz) RETURNS text LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN extract(microseconds FROM t AT TIME ZONE 'UTC')::int % 1000 = 0
              THEN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
              ELSE to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') END
$$;
--> statement-breakpoint
-- A row's raw text from its columns by a source's layout; NULL when a column the layout names is NULL.
CREATE FUNCTION straggler.raw_of_layout(layout text, rest text, event_id text, event_time timestamptz, ingestion_time timestamptz, group_key text, value numeric)
RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN bool_and(p IS NOT NULL) THEN string_agg(p, ',' ORDER BY o) END
    FROM (SELECT o, CASE c WHEN 'e' THEN event_id
                           WHEN 't' THEN straggler.instant_text(event_time)
                           WHEN 'i' THEN straggler.instant_text(ingestion_time)
                           WHEN 'k' THEN group_key
                           WHEN 'v' THEN value::text
                           -- string_to_array('', ',') is an empty array: a lone x field that is empty
                           WHEN 'x' THEN CASE WHEN rest = '' THEN '' ELSE (string_to_array(rest, ','))[xn] END END AS p
            FROM (SELECT c, o, sum((c = 'x')::int) OVER (ORDER BY o) AS xn
                    FROM unnest(string_to_array(layout, NULL)) WITH ORDINALITY AS l(c, o)) letters) parts
$$;
--> statement-breakpoint
-- A bronze row's raw text as received: its own, or the one its columns reproduce by its source's layout.
CREATE FUNCTION straggler.bronze_raw(raw text, raw_rest text, pipeline text, source text, event_id text, event_time timestamptz, ingestion_time timestamptz, group_key text, value numeric)
RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(raw, (SELECT straggler.raw_of_layout(h.raw_layout, raw_rest, event_id, event_time, ingestion_time, group_key, value)
                          FROM straggler.source_headers h WHERE h.pipeline = bronze_raw.pipeline AND h.source = bronze_raw.source))
$$;
--> statement-breakpoint
-- The raw columns still never change, with one exception: a row written without its text may get
-- the text its columns reproduce (a cutover does so before it changes those columns).
CREATE OR REPLACE FUNCTION straggler.bronze_raw_unchanged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.seq IS DISTINCT FROM OLD.seq OR NEW.pipeline IS DISTINCT FROM OLD.pipeline OR NEW.event_id IS DISTINCT FROM OLD.event_id
     OR (NEW.raw IS DISTINCT FROM OLD.raw
         AND (OLD.raw IS NOT NULL
              OR NEW.raw IS DISTINCT FROM straggler.bronze_raw(NULL, OLD.raw_rest, OLD.pipeline, OLD.source, OLD.event_id, OLD.event_time, OLD.ingestion_time, OLD.group_key, OLD.value)))
     OR NEW.raw_rest IS DISTINCT FROM OLD.raw_rest
     OR NEW.ingestion_time IS DISTINCT FROM OLD.ingestion_time OR NEW.source IS DISTINCT FROM OLD.source
     OR NEW.source_line IS DISTINCT FROM OLD.source_line OR NEW.landed_at IS DISTINCT FROM OLD.landed_at THEN
    RAISE EXCEPTION 'bronze row % of pipeline %: the raw columns (seq, pipeline, event_id, raw, ingestion_time, source, source_line, landed_at) never change', OLD.seq, OLD.pipeline
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
DROP TRIGGER bronze_raw_unchanged ON straggler.bronze_events;
--> statement-breakpoint
CREATE TRIGGER bronze_raw_unchanged BEFORE UPDATE OF seq, pipeline, event_id, raw, raw_rest, ingestion_time, source, source_line, landed_at
  ON straggler.bronze_events FOR EACH ROW EXECUTE FUNCTION straggler.bronze_raw_unchanged();
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.bronze AS
SELECT b.seq, b.pipeline, b.event_id, b.event_time, b.ingestion_time, straggler.key_out(b.group_key) AS group_key, b.value, b.status, b.reason, b.detail,
       b.policy_version, b.source, b.source_line, b.landed_at,
       straggler.bronze_raw(b.raw, b.raw_rest, b.pipeline, b.source, b.event_id, b.event_time, b.ingestion_time, b.group_key, b.value) AS raw
  FROM straggler.bronze_events b;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.quarantine AS
SELECT b.seq, b.pipeline, b.event_id, b.reason, b.detail, b.event_time, b.ingestion_time, b.source, b.source_line, b.landed_at,
       straggler.bronze_raw(b.raw, b.raw_rest, b.pipeline, b.source, b.event_id, b.event_time, b.ingestion_time, b.group_key, b.value) AS raw
  FROM straggler.bronze_events b
 WHERE b.status = 'quarantined';
