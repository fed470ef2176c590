/**
 * The ids of sources in `straggler.bronze_sources` (one row per pipeline and source name; bronze rows
 * name their source by it), made where missing, in the landing's transaction under the pipeline's
 * append lock (so no other landing makes the same name meanwhile). A source made here records its
 * landing's ingestion time: the landing's rows whose ingestion time is that one store none
 * (drizzle/0053_bronze_ingestion_time_of_source.sql).
 */
import { usOfMs } from "../../../core/instants.js";
import { sqlLiteral } from "../../inlineParams.js";

/** A source a landing writes rows for: its name and the landing's ingestion time (epoch ms, an integer). */
export interface LandingSource {
  name: string;
  landingTimeMs: number;
}

/** A source's record: its id, and the ingestion time its rows that store none have (epoch µs). */
export interface BronzeSource {
  id: number;
  ingestionUs: bigint;
}

/**
 * The statement as text for a multi-statement exchange: one row per distinct name of `sources`, `id`, `name` and
 * `it_us` (the recorded ingestion time, epoch µs as text). A new source records its landing's time; an existing
 * one keeps the time it holds (it never changes: drizzle/0053), which `sourceIdFor` checks.
 * @param pipeline the pipeline's name
 */
export function bronzeSourceIdsText(pipeline: string, sources: readonly LandingSource[]): string {
  const p = sqlLiteral(pipeline);
  const names = sources.map((s) => sqlLiteral(s.name)).join(", ");
  // Exact: whole milliseconds as an interval (no float seconds).
  const times = sources.map((s) => String(s.landingTimeMs)).join(", ");
  return `WITH names(name, it) AS (
  SELECT DISTINCT ON (n) n, timestamptz 'epoch' + ms * interval '1 millisecond'
    FROM unnest(ARRAY[${names}]::text[], ARRAY[${times}]::bigint[]) AS u(n, ms) ORDER BY n, ms),
ins AS (INSERT INTO straggler.bronze_sources (pipeline, name, ingestion_time) SELECT ${p}, name, it FROM names
        ON CONFLICT (pipeline, name) DO NOTHING RETURNING id, name, ingestion_time)
SELECT id, name, (extract(epoch from ingestion_time) * 1000000)::bigint::text AS it_us FROM ins
UNION ALL
SELECT s.id, s.name, (extract(epoch from s.ingestion_time) * 1000000)::bigint::text FROM straggler.bronze_sources s JOIN names USING (name)
 WHERE s.pipeline = ${p}`;
}

/** The records an exchange's answer to `bronzeSourceIdsText` gives, by name. */
export function bronzeSourceIdsFrom(
  rows: { id: string | number; name: string; it_us: string }[],
): Map<string, BronzeSource> {
  return new Map(rows.map((r) => [r.name, { id: Number(r.id), ingestionUs: BigInt(r.it_us) }]));
}

/**
 * The id of `source` for a landing whose rows were classified with ingestion time `landingTimeMs` (epoch ms): the rows
 * that store none take the source's recorded time, which must be that one.
 * @returns the id, or null when the source's record holds another ingestion time: a landing of the same source
 *   committed first (a source lands once: `landed_sources`), or the source was recorded otherwise (by hand, by a
 *   restore, before migration 0053); its rows would read another time, so this landing must not land, and the caller
 *   answers as for a source recorded meanwhile
 */
export function sourceIdFor(sources: Map<string, BronzeSource>, source: string, landingTimeMs: number): number | null {
  const s = sources.get(source)!;
  return s.ingestionUs === usOfMs(landingTimeMs) ? s.id : null;
}
