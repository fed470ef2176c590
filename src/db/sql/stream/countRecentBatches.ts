/** How many of a pipeline's latest micro-batches there are, up to a limit (`straggler.batch_progress`), for the pipeline page's heading. */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

const COUNT_RECENT_BATCHES = "count_recent_batches";
/** The latest `$2` batches through the primary key (pipeline, batch_id), backwards: O($2), whatever the history. */
const COUNT_RECENT_BATCHES_SQL = `SELECT count(*)::int AS n
  FROM (SELECT 1 FROM straggler.batch_progress WHERE pipeline = $1 ORDER BY batch_id DESC LIMIT $2) b`;

/**
 * @param limit batches at most
 * @returns the pipeline's micro-batches, at most `limit` (0 before the first)
 * @throws the database's error when it cannot be reached
 */
export async function countRecentBatches(client: Queryable, pipeline: string, limit: number): Promise<number> {
  return (await client.query(prepared(COUNT_RECENT_BATCHES, COUNT_RECENT_BATCHES_SQL, [pipeline, limit]))).rows[0].n;
}
