/** Finalizes the windows the watermark has passed (DESIGN §6): their end is at or before it; the stream no longer updates them. */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

const FINALIZE_WINDOWS = "finalize";
const FINALIZE_WINDOWS_SQL = `UPDATE straggler.window_results_table SET is_final = true, updated_at = now()
        WHERE pipeline = $1 AND NOT is_final AND window_end <= $2`;

/**
 * @param watermark ISO 8601 instant; null finalizes nothing
 * @returns windows finalized
 */
export async function finalizeWindows(client: Queryable, pipeline: string, watermark: string | null): Promise<number> {
  return (await client.query(prepared(FINALIZE_WINDOWS, FINALIZE_WINDOWS_SQL, [pipeline, watermark]))).rowCount ?? 0;
}
