/** Lists a pipeline's sources with their state, for `straggler sources`. */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

/** One row of `straggler.sources`; `last_seen` is an ISO 8601 UTC string. */
export interface SourceRow {
  source: string;
  kind: string;
  state: string;
  reason: string | null;
  size_bytes: number | null;
  rows: number;
  accepted: number;
  quarantined: number;
  last_seen: string;
}

const LIST_SOURCES = "list_sources";
const LIST_SOURCES_SQL = `SELECT source, kind, state, reason, size_bytes, rows, accepted, quarantined, last_seen FROM straggler.sources
  WHERE pipeline = $1 AND ($2::text IS NULL OR state = $2) ORDER BY last_seen DESC, source LIMIT $3`;

/** At most `limit` sources of `pipeline`, most recently seen first; only those in `state` when given. */
export async function listSources(client: Queryable, pipeline: string, state: string | undefined, limit: number): Promise<SourceRow[]> {
  return (await client.query<SourceRow>(prepared(LIST_SOURCES, LIST_SOURCES_SQL, [pipeline, state ?? null, limit]))).rows;
}
