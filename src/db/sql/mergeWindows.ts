/**
 * MERGEs the batch's on-time pairs into the results in update mode (DESIGN
 * §5): the pairs of one (key, window) are aggregated first (a MERGE source
 * may not hold two rows for one target row), then folded into the stored
 * window unless it is final, or inserted as a new open window.
 */
import type { PoolClient } from "../pool.js";
import { prepared } from "../prepared.js";
import { BATCH_PAIRS, pairWindowBounds } from "./fragments/batchPairs.js";
import { aggregateWindow, combineAggregates, computedAggregates, storedAggregates } from "./fragments/windowAggregates.js";

const MERGE_WINDOWS = "merge";
/** The MERGE's text: $1 pipeline, $2 batch id (exported for plan tests). */
export function mergeSql(): string {
  const { windowStart, windowEnd } = pairWindowBounds();
  return `MERGE INTO straggler.window_results_table AS t
       USING (SELECT group_key, ${windowStart} AS window_start, ${windowEnd} AS window_end,
                     ${aggregateWindow()}
                FROM ${BATCH_PAIRS} WHERE NOT late GROUP BY group_key, ws_us, we_us) AS s
          ON t.pipeline = $1 AND t.group_key = s.group_key AND t.window_start = s.window_start AND t.window_end = s.window_end
       WHEN MATCHED AND NOT t.is_final THEN
         UPDATE SET ${combineAggregates("t", "s")},
                    last_batch_id = $2, updated_at = now()
       WHEN NOT MATCHED THEN
         INSERT (pipeline, group_key, window_start, window_end, ${storedAggregates()}, last_batch_id)
         VALUES ($1, s.group_key, s.window_start, s.window_end, ${computedAggregates("s")}, $2)`;
}

/**
 * @returns windows MERGEd (updated or inserted)
 * @throws the database's error, e.g. a data exception (SQLSTATE class 22) when a sum overflows `numeric`
 */
export async function mergeWindows(client: PoolClient, pipeline: string, batchId: number): Promise<number> {
  return (await client.query(prepared(MERGE_WINDOWS, mergeSql(), [pipeline, batchId]))).rowCount ?? 0;
}
