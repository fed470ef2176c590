/**
 * MERGEs the batch's on-time pairs into the results in update mode (DESIGN
 * §5): the pairs of one (key, window) are aggregated first (a MERGE source
 * may not hold two rows for one target row), then folded into the stored
 * window unless it is final, or inserted as a new window.
 *
 * A window the batch touches whose end is `<=` the watermark after the batch
 * is written final by the MERGE itself (DESIGN §6: what closeBatch's
 * finalization would do next in the same transaction), so its row is written
 * once, not inserted open and then rewritten final with new entries in every
 * index. closeBatch finalizes the windows the batch did not touch and counts
 * both (src/db/sql/stream/closeBatch.ts).
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { BATCH_PAIRS, pairWindowBounds } from "../fragments/batchPairs.js";
import { aggregateWindow, combineAggregates, computedAggregates, storedAggregates } from "../fragments/windowAggregates.js";

const MERGE_WINDOWS = "merge";
/**
 * The MERGE's text (exported for plan tests): $1 pipeline, $2 batch id, $3 the watermark after the
 * batch as epoch µs (bigint), or null to write every window open (closeBatch then finalizes).
 */
export function mergeSql(): string {
  const { windowStart, windowEnd } = pairWindowBounds();
  return `MERGE INTO straggler.window_results_table AS t
       USING (SELECT group_key, ${windowStart} AS window_start, ${windowEnd} AS window_end,
                     ($3::bigint IS NOT NULL AND we_us <= $3::bigint) AS is_final,
                     ${aggregateWindow()}
                FROM ${BATCH_PAIRS} WHERE NOT late GROUP BY group_key, ws_us, we_us) AS s
          ON t.pipeline = $1 AND t.group_key = s.group_key AND t.window_start = s.window_start AND t.window_end = s.window_end
       WHEN MATCHED AND NOT t.is_final THEN
         UPDATE SET ${combineAggregates("t", "s")},
                    is_final = s.is_final, last_batch_id = $2, updated_at = now()
       WHEN NOT MATCHED THEN
         INSERT (pipeline, group_key, window_start, window_end, ${storedAggregates()}, is_final, last_batch_id)
         VALUES ($1, s.group_key, s.window_start, s.window_end, ${computedAggregates("s")}, s.is_final, $2)`;
}

/**
 * @param finalUpToUs the watermark after the batch, epoch µs: windows ending at or before it are written final; null writes every window open
 * @returns windows MERGEd (updated or inserted)
 * @throws the database's error, e.g. a data exception (SQLSTATE class 22) when a sum overflows `numeric`
 */
export async function mergeWindows(client: PoolClient, pipeline: string, batchId: number, finalUpToUs: bigint | null): Promise<number> {
  return (await client.query(prepared(MERGE_WINDOWS, mergeSql(), [pipeline, batchId, finalUpToUs?.toString() ?? null]))).rowCount ?? 0;
}
