/** Reads the landing records of several sources of one pipeline at once (group commit: the members that carry an Idempotency-Key). */
import { inlineParams } from "../../inlineParams.js";
import type { Queryable } from "../../pool.js";
import type { LandedSourceRow } from "./readLandedSource.js";

const READ_LANDED_SOURCES_SQL =
  "SELECT source, rows, accepted, quarantined, first_seq, last_seq, by_reason, request_sha256 FROM straggler.landed_sources WHERE pipeline = $1 AND source = ANY($2::text[])";

/**
 * @returns the records of those of `sources` that have landed in `pipeline`, by source (absent: not landed)
 * @throws the database's error
 */
async function readLandedSources(
  client: Queryable,
  pipeline: string,
  sources: string[],
): Promise<Map<string, LandedSourceRow>> {
  const { rows } = await client.query<LandedSourceRow & { source: string }>(READ_LANDED_SOURCES_SQL, [
    pipeline,
    sources,
  ]);
  return new Map(rows.map(({ source, ...r }) => [source, r]));
}

/** The same read as SQL text without parameters, to send with other statements in one round trip (group commit); its rows as `landedSourcesFrom` reads them. */
export function readLandedSourcesText(pipeline: string, sources: string[]): string {
  return inlineParams(READ_LANDED_SOURCES_SQL, [pipeline, sources]);
}

/** The records in the rows of `readLandedSourcesText`'s result, by source. */
export function landedSourcesFrom(rows: (LandedSourceRow & { source: string })[]): Map<string, LandedSourceRow> {
  return new Map(rows.map(({ source, ...r }) => [source, r]));
}
