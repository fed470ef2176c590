-- A bronze row's raw text read back in a few microseconds instead of hundreds (issue 30; BENCHMARKS.md
-- "Issue 30, round fourteen"). straggler.raw_of_layout (0039, 0045, 0047) was one SQL statement over the
-- layout's letters (unnest, a window sum, string_agg): PostgreSQL runs such a function as a query of its
-- own on every call, and a rebuild reads every elided row through it (455 µs a row on PostgreSQL 15,
-- about 100 on 18). The same rules as a PL/pgSQL loop, whose expressions are planned once a session:
-- each letter gives its part (e event id, t event time, i ingestion time, a raw_at or else the event time,
-- k group key, v value, x the next field of raw_rest, where an empty raw_rest is one empty field); any
-- part NULL, an unknown letter or an empty or NULL layout gives NULL; the parts are joined by commas.
-- straggler.bronze_raw keeps its meaning: a row's own raw text, else its columns by its source's layout.
CREATE OR REPLACE FUNCTION straggler.raw_of_layout(layout text, rest text, at timestamptz, event_id text, event_time timestamptz, ingestion_time timestamptz, group_key text, value numeric)
RETURNS text LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  whole text;
  part text;
  letter text;
  rest_fields text[] := CASE WHEN rest <> '' THEN string_to_array(rest, ',') END;
  xn int := 0;
BEGIN
  IF layout IS NULL OR layout = '' THEN
    RETURN NULL;
  END IF;
  FOREACH letter IN ARRAY string_to_array(layout, NULL) LOOP
    IF letter = 'x' THEN
      xn := xn + 1;
    END IF;
    part := CASE letter WHEN 'e' THEN event_id
                        WHEN 't' THEN straggler.instant_text(event_time)
                        WHEN 'i' THEN straggler.instant_text(ingestion_time)
                        WHEN 'a' THEN straggler.instant_text(coalesce(at, event_time))
                        WHEN 'k' THEN group_key
                        WHEN 'v' THEN value::text
                        WHEN 'x' THEN CASE WHEN rest = '' THEN '' ELSE rest_fields[xn] END END;
    IF part IS NULL THEN
      RETURN NULL;
    END IF;
    whole := CASE WHEN whole IS NULL THEN part ELSE whole || ',' || part END;
  END LOOP;
  RETURN whole;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION straggler.bronze_raw(raw text, raw_rest text, raw_at timestamptz, source_id bigint, event_id text, event_time timestamptz, ingestion_time timestamptz, group_key text, value numeric)
RETURNS text LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  layout text;
BEGIN
  IF raw IS NOT NULL THEN
    RETURN raw;
  END IF;
  SELECT h.raw_layout INTO layout
    FROM straggler.bronze_sources s JOIN straggler.source_headers h ON h.pipeline = s.pipeline AND h.source = s.name
   WHERE s.id = bronze_raw.source_id;
  RETURN straggler.raw_of_layout(layout, raw_rest, raw_at, event_id, event_time, ingestion_time, group_key, value);
END $$;
