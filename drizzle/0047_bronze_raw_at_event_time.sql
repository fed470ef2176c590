-- A CSV row's instant field (layout letter a, 0045) whose text is its event time's as the t letter writes it is
-- kept as nothing at all: raw_at NULL reads back as the event time (issue 30 item 2; BENCHMARKS.md "Issue 30,
-- round eleven"). On the peers workload every on-time event's arrival time equals its event time: 8 bytes of
-- heap a row. src/ingest/rawLayout.ts writes raw_at NULL only then, after the same check as the t letter; a row
-- landed before kept its raw_at, which this reads as before. A cutover that changes a row's event time gives the
-- row its raw text first (src/db/sql/lifecycle/versionSwap.ts), as for the t letter.
CREATE OR REPLACE FUNCTION straggler.raw_of_layout(layout text, rest text, at timestamptz, event_id text, event_time timestamptz, ingestion_time timestamptz, group_key text, value numeric)
RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN bool_and(p IS NOT NULL) THEN string_agg(p, ',' ORDER BY o) END
    FROM (SELECT o, CASE c WHEN 'e' THEN event_id
                           WHEN 't' THEN straggler.instant_text(event_time)
                           WHEN 'i' THEN straggler.instant_text(ingestion_time)
                           WHEN 'a' THEN straggler.instant_text(coalesce(at, event_time))
                           WHEN 'k' THEN group_key
                           WHEN 'v' THEN value::text
                           -- string_to_array('', ',') is an empty array: a lone x field that is empty
                           WHEN 'x' THEN CASE WHEN rest = '' THEN '' ELSE (string_to_array(rest, ','))[xn] END END AS p
            FROM (SELECT c, o, sum((c = 'x')::int) OVER (ORDER BY o) AS xn
                    FROM unnest(string_to_array(layout, NULL)) WITH ORDINALITY AS l(c, o)) letters) parts
$$;
