/**
 * Finalizes the windows the watermark has passed (DESIGN §6): their end is at
 * or before it; the stream no longer updates them. The same statement counts
 * the pipeline's windows still open after it (Spark's state rows,
 * `numRowsTotal`): one round trip for both.
 */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

const FINALIZE_WINDOWS = "finalize";
// Every part of one statement reads the same snapshot: the open count does not see the
// UPDATE, so the windows it finalized (all open before it) are taken off.
const FINALIZE_WINDOWS_SQL = `WITH fin AS (
         UPDATE straggler.window_results_table SET is_final = true, updated_at = now()
          WHERE pipeline = $1 AND NOT is_final AND window_end <= $2
         RETURNING 1)
       SELECT (SELECT count(*) FROM fin)::int AS finalized,
              ((SELECT count(*) FROM straggler.window_results_table WHERE pipeline = $1 AND NOT is_final) - (SELECT count(*) FROM fin))::int AS open`;

/** Windows finalized by a batch, and the pipeline's windows open after it. */
export interface Finalized {
  finalized: number;
  open: number;
}

/**
 * @param watermark ISO 8601 instant; null finalizes nothing
 * @returns windows finalized, and windows still open afterwards
 */
export async function finalizeWindows(client: Queryable, pipeline: string, watermark: string | null): Promise<Finalized> {
  const r = (await client.query(prepared(FINALIZE_WINDOWS, FINALIZE_WINDOWS_SQL, [pipeline, watermark]))).rows[0];
  return { finalized: r.finalized, open: r.open };
}
