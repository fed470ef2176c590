/**
 * The batch's (event, window) pairs: a temporary table kept per session and
 * emptied at every commit (no catalog writes per batch), filled by
 * `assignBatchWindows` and read by the late-pair, MERGE and isolation steps.
 * Windows are bigint starts and ends in epoch µs (`ws_us`, `we_us`; a start
 * names a window, the end is kept because a calendar window's length varies);
 * `late` is Spark's rule against the watermark of earlier batches.
 */
import { usToTimestamptz } from "./windowAssignment.js";

export const BATCH_PAIRS = "batch_pairs_us";

export const CREATE_BATCH_PAIRS_SQL = `CREATE TEMP TABLE IF NOT EXISTS ${BATCH_PAIRS} (seq bigint, group_key text, value numeric,
         ws_us bigint, we_us bigint, late boolean) ON COMMIT DELETE ROWS`;

/** SQL for a pair's window bounds as timestamptz, from its `ws_us` and `we_us` (group by both). */
export function pairWindowBounds(): { windowStart: string; windowEnd: string } {
  return { windowStart: usToTimestamptz("ws_us"), windowEnd: usToTimestamptz("we_us") };
}
