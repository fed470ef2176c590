/**
 * The CSV header line of each landed source (`straggler.source_headers`): a
 * rebuild reads the source's raw lines again by it (src/lifecycle/rebuild.ts).
 */
import type { Queryable } from "../../pool.js";

/** Records the header line `header` of `source`, in the landing's transaction (once per source). */
export async function recordSourceHeader(client: Queryable, pipeline: string, source: string, header: string): Promise<void> {
  await client.query("INSERT INTO straggler.source_headers (pipeline, source, header) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", [pipeline, source, header]);
}

/** @returns the header line of each of `sources` of `pipeline` that has one recorded */
export async function readSourceHeaders(client: Queryable, pipeline: string, sources: string[]): Promise<Map<string, string>> {
  const { rows } = await client.query("SELECT source, header FROM straggler.source_headers WHERE pipeline = $1 AND source = ANY($2::text[])", [pipeline, sources]);
  return new Map(rows.map((r: { source: string; header: string }) => [r.source, r.header]));
}
