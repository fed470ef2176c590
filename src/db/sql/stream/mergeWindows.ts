/**
 * MERGEs the batch's on-time pairs into the live version's results in update
 * mode (DESIGN §5; drizzle/0051): the pairs of one (key, window) are aggregated first (a MERGE source
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
import { liveVersion } from "../fragments/liveVersion.js";
import { CHANGE_COLUMNS, changeRow, stored } from "../fragments/changeRows.js";
import {
  combineAggregates,
  computedAggregates,
  foldAggregates,
  storedAggregates,
} from "../fragments/windowAggregates.js";

/**
 * The MERGE's text (exported for plan tests): $1 pipeline, $2 batch id, $3 the watermark after the
 * batch as epoch µs (bigint), or null to write every window open (closeBatch then finalizes).
 * `feed`: the pipeline keeps a change feed (`feed.enabled`, docs/change-feed.md): a data-modifying
 * CTE beside the MERGE writes each window's change (src/db/sql/fragments/changeRows.ts). It reads
 * the windows in the statement's snapshot (before the MERGE) and folds the batch's aggregates into
 * them as the MERGE does, for the windows the MERGE writes (new, or stored and not final); the
 * batch's aggregates are computed once (`s`, materialized) for both. Ids are drawn in key and window order.
 */
export function mergeSql(feed = false): string {
  const { windowStart, windowEnd } = pairWindowBounds();
  const source = `SELECT group_key, ${windowStart} AS window_start, ${windowEnd} AS window_end,
                ($3::bigint IS NOT NULL AND we_us <= $3::bigint) AS is_final,
                ${foldAggregates()}
           FROM ${BATCH_PAIRS} WHERE NOT late GROUP BY group_key, ws_us, we_us`;
  const after = [
    "coalesce(t.event_count, 0) + s.n",
    "CASE WHEN s.s IS NULL THEN t.value_sum ELSE coalesce(t.value_sum, 0) + s.s END",
    "least(t.value_min, s.lo)",
    "greatest(t.value_max, s.hi)",
  ];
  const row = changeRow({
    pipeline: "$1",
    change: "CASE WHEN t.pipeline IS NULL THEN 'new' ELSE 'updated' END",
    key: "s.group_key",
    start: "s.window_start",
    end: "s.window_end",
    revision: "coalesce(t.revision, 1)",
    before: stored("t"),
    after,
  });
  const head = !feed
    ? `MERGE INTO straggler.window_results_table AS t
       USING (${source}) AS s`
    : `WITH s AS MATERIALIZED (
         ${source}),
       feed AS (
         INSERT INTO straggler.window_changes (${CHANGE_COLUMNS}, batch_id)
         SELECT ${row}, $2
           FROM s LEFT JOIN straggler.window_results_table t
             ON t.pipeline = $1 AND t.version = ${liveVersion()} AND t.group_key = s.group_key AND t.window_start = s.window_start AND t.window_end = s.window_end
          WHERE t.pipeline IS NULL OR NOT t.is_final
          ORDER BY s.group_key, s.window_start)
       MERGE INTO straggler.window_results_table AS t
       USING s`;
  return `${head}
          ON t.pipeline = $1 AND t.version = ${liveVersion()} AND t.group_key = s.group_key AND t.window_start = s.window_start AND t.window_end = s.window_end
       WHEN MATCHED AND NOT t.is_final THEN
         UPDATE SET ${combineAggregates("t", "s")},
                    is_final = s.is_final, last_batch_id = $2, updated_at = now()
       WHEN NOT MATCHED THEN
         INSERT (pipeline, version, group_key, window_start, window_end, ${storedAggregates()}, is_final, last_batch_id)
         VALUES ($1, ${liveVersion()}, s.group_key, s.window_start, s.window_end, ${computedAggregates("s")}, s.is_final, $2)`;
}

/**
 * @param finalUpToUs the watermark after the batch, epoch µs: windows ending at or before it are written final; null writes every window open
 * @param feed the pipeline keeps a change feed (`feed.enabled`): the same statement writes the batch's changes
 * @returns windows MERGEd (updated or inserted)
 * @throws the database's error, e.g. a data exception (SQLSTATE class 22) when a sum overflows `numeric`
 */
export async function mergeWindows(
  client: PoolClient,
  pipeline: string,
  batchId: number,
  finalUpToUs: bigint | null,
  feed = false,
): Promise<number> {
  const name = feed ? "merge_feed" : "merge";
  return (
    (await client.query(prepared(name, mergeSql(feed), [pipeline, batchId, finalUpToUs?.toString() ?? null])))
      .rowCount ?? 0
  );
}
