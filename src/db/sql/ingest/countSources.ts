/** Counts a pipeline's sources matching `sources`' filters (view `straggler.sources`), for its "… and N more" line. */
import type { Queryable } from "../../pool.js";

const COUNT_MATCHING_SQL = `SELECT count(*)::int AS n FROM straggler.sources
     WHERE pipeline = $1 AND ($2::text IS NULL OR state = $2) AND ($3::text IS NULL OR kind = $3)`;

/**
 * @param filter.state only sources in this state; `filter.kind` only of this kind (both optional)
 * @returns how many sources of `pipeline` match
 * @throws the database's error
 */
export async function countMatchingSources(
  client: Queryable,
  pipeline: string,
  filter: { state?: string | undefined; kind?: string | undefined },
): Promise<number> {
  const { rows } = await client.query<{ n: number }>(COUNT_MATCHING_SQL, [
    pipeline,
    filter.state ?? null,
    filter.kind ?? null,
  ]);
  return rows[0]!.n;
}
