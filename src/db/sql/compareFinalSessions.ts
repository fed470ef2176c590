/**
 * Reconcile's comparison for session windows: every final session as stored
 * against the batch sessionization of the accepted bronze rows up to the
 * snapshot (src/core/sessions.ts `sessionize`, written in SQL: per key, sorted
 * by event time, a session starts at an event later than the previous one's
 * time + gap). A session must be final when it ends at or before the
 * watermark. Bronze is read whole (a session has no bounded length), the
 * range only filters the sessions compared.
 */
import type { PipelineConfig } from "../../config/pipelines.js";
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";
import type { ComparedWindow, CompareRequest } from "./compareFinalWindows.js";
import { computedAggregates } from "./fragments/windowAggregates.js";
import { notSuperseded } from "./fragments/superseded.js";
import { timestamptzToUs, usToTimestamptz } from "./fragments/windowAssignment.js";

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
), expected AS (
  SELECT * FROM fresh
   WHERE $3::timestamptz IS NOT NULL AND window_end <= $3
     AND ($4::timestamptz IS NULL OR (window_start < $5 AND window_end > $4))
), stored AS (
  SELECT group_key, window_start, window_end, event_count AS n, value_sum AS s, value_min AS lo, value_max AS hi
    FROM straggler.window_results_table
   WHERE pipeline = $1 AND is_final AND event_count > 0 AND ($4::timestamptz IS NULL OR (window_start < $5 AND window_end > $4))
)
SELECT coalesce(e.group_key, s.group_key) AS group_key, coalesce(e.window_start, s.window_start) AS window_start,
       coalesce(e.window_end, s.window_end) AS window_end,
       s.n AS s_n, s.s AS s_s, s.lo AS s_lo, s.hi AS s_hi, e.n AS e_n, e.s AS e_s, e.lo AS e_lo, e.hi AS e_hi,
       (${computedAggregates("s")}) IS DISTINCT FROM (${computedAggregates("e")}) AS differs
  FROM expected e FULL JOIN stored s USING (group_key, window_start, window_end)`;

/**
 * Compares the final sessions of `pipeline` (gap `gapMs`) with the batch sessionization of bronze, unordered.
 * `req.only` and `req.skip` are not used: a session's recompute is not isolated.
 * @throws the database's error
 */
export async function compareFinalSessions(client: Queryable, pipeline: PipelineConfig, gapMs: number, req: CompareRequest): Promise<ComparedWindow[]> {
  const { rows } = await client.query(
    prepared("compare_final_sessions", COMPARE_SQL, [pipeline.name, req.snapshot, req.watermark, req.range?.from ?? null, req.range?.to ?? null, (BigInt(gapMs) * 1000n).toString()]),
  );
  const aggregate = (n: number | null, sum: string | null, min: string | null, max: string | null) => (n === null ? null : { count: n, sum, min, max });
  return rows.map((r) => ({
    groupKey: r.group_key,
    windowStart: r.window_start,
    windowEnd: r.window_end,
    stored: aggregate(r.s_n, r.s_s, r.s_lo, r.s_hi),
    expected: aggregate(r.e_n, r.e_s, r.e_lo, r.e_hi),
    differs: r.differs,
  }));
}
