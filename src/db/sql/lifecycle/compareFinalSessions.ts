/**
 * Reconcile's comparison for session windows: every final session as stored
 * against the batch sessionization of the accepted bronze rows up to the
 * snapshot (src/core/sessions.ts `sessionize`, written in SQL: per key, sorted
 * by event time, a session starts at an event later than the previous one's
 * time + gap). A session must be final when it ends at or before the
 * watermark. Bronze is read whole (a session has no bounded length), the
 * range only filters the sessions compared.
 */
import type { WindowedPipeline } from "../../../core/pipelineSpec.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { comparedRow, FINAL_AGAINST_FRESH, type ComparedWindow, type CompareRequest } from "./compareFinalWindows.js";
import { notSuperseded } from "../fragments/superseded.js";
import { timestamptzToUs, usToTimestamptz } from "../fragments/windowAssignment.js";

/* $1 pipeline, $2 snapshot, $3 watermark, $4/$5 range, $6 gap µs. */
const COMPARE_SQL = `WITH ev AS (
  SELECT b.group_key, x.t_us, b.value
    FROM straggler.bronze_events b CROSS JOIN LATERAL (SELECT ${timestamptzToUs("b.event_time")} AS t_us) x
   WHERE b.pipeline = $1 AND b.status = 'accepted' AND b.seq + 0 <= $2 AND ${notSuperseded("b", "$2")}
), marked AS (
  SELECT *, CASE WHEN t_us <= max(t_us) OVER (PARTITION BY group_key ORDER BY t_us ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) + $6::bigint
                 THEN 0 ELSE 1 END AS starts FROM ev
), numbered AS (
  SELECT *, sum(starts) OVER (PARTITION BY group_key ORDER BY t_us ROWS UNBOUNDED PRECEDING) AS island FROM marked
), fresh AS (
  SELECT group_key, ${usToTimestamptz("min(t_us)")} AS window_start, ${usToTimestamptz("max(t_us) + $6::bigint")} AS window_end,
         count(*) AS n, sum(value) AS s, min(value) AS lo, max(value) AS hi
    FROM numbered GROUP BY group_key, island
${FINAL_AGAINST_FRESH}`;

/**
 * Compares the final sessions of `pipeline` (gap `gapMs`) with the batch sessionization of bronze, unordered.
 * `req.only` and `req.skip` are not used: a session's recompute is not isolated.
 * @throws the database's error
 */
export async function compareFinalSessions(
  client: Queryable,
  pipeline: WindowedPipeline,
  gapMs: number,
  req: CompareRequest,
): Promise<ComparedWindow[]> {
  const { rows } = await client.query(
    prepared("compare_final_sessions", COMPARE_SQL, [
      pipeline.name,
      req.snapshot,
      req.watermark,
      req.range?.from ?? null,
      req.range?.to ?? null,
      (BigInt(gapMs) * 1000n).toString(),
    ]),
  );
  return rows.map(comparedRow);
}
