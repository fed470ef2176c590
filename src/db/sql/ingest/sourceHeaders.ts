/**
 * The CSV header line of each landed source (`straggler.source_headers`): a
 * rebuild reads the source's raw lines again by it (src/lifecycle/rebuild.ts).
 */
import type { Queryable } from "../../pool.js";

/** The header's upsert: $1 pipeline, $2 source, $3 header, $4 raw layout; returns the layout recorded (an earlier part's wins). */
export const SOURCE_HEADER_SQL = `INSERT INTO straggler.source_headers AS h (pipeline, source, header, raw_layout) VALUES ($1, $2, $3, $4)
     ON CONFLICT (pipeline, source) DO UPDATE SET raw_layout = coalesce(h.raw_layout, EXCLUDED.raw_layout) RETURNING raw_layout`;

/**
 * Records the header line `header` of `source`, in the landing's transaction (once per source), with the
 * layout its rows written without raw text are read back by (src/ingest/rawLayout.ts; null when none was).
 */
export async function recordSourceHeader(
  client: Queryable,
  pipeline: string,
  source: string,
  header: string,
  rawLayout: string | null = null,
): Promise<void> {
  const { rows } = await client.query(SOURCE_HEADER_SQL, [pipeline, source, header, rawLayout]);
  checkLayout(source, rawLayout, rows[0].raw_layout as string | null);
}

/**
 * A source landed in parts (an append-only file) reads every part's rows by one layout.
 * @param written the layout this landing's rows without raw text were written by (null: none was)
 * @param recorded the layout the source's header record holds after the upsert
 * @throws Error when this landing wrote rows by another layout than the recorded one (the transaction must roll back)
 */
export function checkLayout(source: string, written: string | null, recorded: string | null): void {
  if (written !== null && recorded !== written) {
    throw new Error(
      `${source}: its rows were written by the layout ${written} but the source's recorded layout is ${recorded}`,
    );
  }
}

/** @returns the header line of each of `sources` of `pipeline` that has one recorded */
export async function readSourceHeaders(
  client: Queryable,
  pipeline: string,
  sources: string[],
): Promise<Map<string, string>> {
  const { rows } = await client.query(
    "SELECT source, header FROM straggler.source_headers WHERE pipeline = $1 AND source = ANY($2::text[])",
    [pipeline, sources],
  );
  return new Map(rows.map((r: { source: string; header: string }) => [r.source, r.header]));
}
