/** The sources of one pipeline landed under a name prefix (a replay's spans: `replay:<dataset>:`), for a replay that resumes. */
import type { Queryable } from "../../pool.js";

// left(…) = prefix rather than LIKE: a prefix is matched as written, `_` and `%` included.
const READ_LANDED_PREFIX_SQL =
  "SELECT source FROM straggler.landed_sources WHERE pipeline = $1 AND left(source, length($2)) = $2";

/**
 * @returns the names of `pipeline`'s landed sources that begin with `prefix`
 * @throws the database's error
 */
export async function readLandedPrefix(client: Queryable, pipeline: string, prefix: string): Promise<Set<string>> {
  const { rows } = await client.query<{ source: string }>(READ_LANDED_PREFIX_SQL, [pipeline, prefix]);
  return new Set(rows.map((r) => r.source));
}
