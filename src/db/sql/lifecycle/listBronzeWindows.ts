/** The windows that accepted bronze rows fall in: what reconcile bisects when a recompute fails. */
import { windowSpecOf, type WindowedPipeline } from "../../../core/pipelineSpec.js";
import { longestWindowMs } from "../../../core/windows.js";
import { windowsLateral } from "../fragments/windowAssignment.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { KeyedWindow } from "../readmodel/windows.js";

const listSql = (pipeline: WindowedPipeline) => `SELECT DISTINCT b.group_key, w.window_start, w.window_end
  FROM straggler.bronze_events b ${windowsLateral(windowSpecOf(pipeline), "b")}
 WHERE b.pipeline = $1 AND b.status = 'accepted' AND b.seq + 0 <= $2
   AND ($3::timestamptz IS NULL OR (b.event_time >= $3::timestamptz - $5 * interval '1 millisecond' AND b.event_time < $4))
 ORDER BY 1, 2`;

/**
 * Every (key, window) holding an accepted row of `pipeline` up to bronze `seq` `snapshot`,
 * among rows that may fall in a window overlapping `range` (`[from, to)`, ISO; null: all).
 * @returns ordered by key, then window start
 */
export async function listBronzeWindows(
  client: Queryable,
  pipeline: WindowedPipeline,
  snapshot: number,
  range: { from: string; to: string } | null,
): Promise<KeyedWindow[]> {
  const { rows } = await client.query(
    prepared("list_bronze_windows", listSql(pipeline), [
      pipeline.name,
      snapshot,
      range?.from ?? null,
      range?.to ?? null,
      longestWindowMs(windowSpecOf(pipeline)),
    ]),
  );
  return rows.map((r) => ({ groupKey: r.group_key, windowStart: r.window_start, windowEnd: r.window_end }));
}
