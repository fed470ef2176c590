/**
 * Reconcile's comparison: every final window as stored against a fresh
 * recompute from bronze — the batch oracle (DESIGN §9: a full replacement
 * from accepted bronze rows, never a delta). Rows superseded by a later
 * version up to the snapshot are left out (fragments/superseded.ts); a final
 * window stored with no rows (an amendment moved its only event away) is no
 * window, as bronze says.
 */
import { windowSpecOf, type WindowedPipeline } from "../../../core/pipelineSpec.js";
import { longestWindowMs } from "../../../core/windows.js";
import { windowsLateral } from "../fragments/windowAssignment.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { aggregateWindow, computedAggregates } from "../fragments/windowAggregates.js";
import type { Aggregate } from "../readmodel/windows.js";
import { notSuperseded } from "../fragments/superseded.js";
import { liveVersion } from "../fragments/liveVersion.js";

/** A window by its stored group key and start (ISO 8601). */
interface WindowRef {
  groupKey: string;
  windowStart: string;
}

/** One window of the comparison: stored (final) and expected (from bronze); null where there is none. */
export interface ComparedWindow {
  /** As stored (the null group is `NULL_KEY`). */
  groupKey: string;
  windowStart: string;
  windowEnd: string;
  stored: Aggregate | null;
  expected: Aggregate | null;
  /** The two differ, numerically (9.3 equals 9.30), or one is missing. */
  differs: boolean;
}

export interface CompareRequest {
  /** Bronze rows up to this `seq` (the stream's checkpoint) are read. */
  snapshot: number;
  /** Windows ending at or before it must be final; null: none must be. */
  watermark: string | null;
  /** Only windows overlapping `[from, to)` (ISO instants); null: all. */
  range: { from: string; to: string } | null;
  /** Recompute only these windows (a trial of the failure path). */
  only?: WindowRef[] | null;
  /** Leave out these windows (those whose recompute fails). */
  skip?: WindowRef[] | null;
}

/**
 * The end of a comparison query, after a CTE `fresh` (group_key, window_start, window_end, n, s, lo, hi)
 * recomputed from bronze: the windows that must be final (end <= $3, the watermark) in the range
 * $4/$5 (ISO instants, null: all) against the final windows stored for pipeline $1, as a FULL JOIN
 * of rows shaped for `comparedRow`. Shared by the window and session comparisons.
 */
export const FINAL_AGAINST_FRESH = `), expected AS (
  SELECT * FROM fresh
   WHERE $3::timestamptz IS NOT NULL AND window_end <= $3
     AND ($4::timestamptz IS NULL OR (window_start < $5 AND window_end > $4))
), stored AS (
  SELECT group_key, window_start, window_end, event_count AS n, value_sum AS s, value_min AS lo, value_max AS hi
    FROM straggler.window_results_table
   WHERE pipeline = $1 AND version = ${liveVersion()} AND is_final AND event_count > 0 AND ($4::timestamptz IS NULL OR (window_start < $5 AND window_end > $4))
)
SELECT coalesce(e.group_key, s.group_key) AS group_key, coalesce(e.window_start, s.window_start) AS window_start,
       coalesce(e.window_end, s.window_end) AS window_end,
       s.n AS s_n, s.s AS s_s, s.lo AS s_lo, s.hi AS s_hi, e.n AS e_n, e.s AS e_s, e.lo AS e_lo, e.hi AS e_hi,
       (${computedAggregates("s")}) IS DISTINCT FROM (${computedAggregates("e")}) AS differs
  FROM expected e FULL JOIN stored s USING (group_key, window_start, window_end)`;

/** One row of a query ending in `FINAL_AGAINST_FRESH`, as a `ComparedWindow`. */
export function comparedRow(r: Record<string, any>): ComparedWindow {
  return {
    groupKey: r.group_key,
    windowStart: r.window_start,
    windowEnd: r.window_end,
    stored: aggregate(r.s_n, r.s_s, r.s_lo, r.s_hi),
    expected: aggregate(r.e_n, r.e_s, r.e_lo, r.e_hi),
    differs: r.differs,
  };
}

/*
 * `b.seq + 0 <= snapshot`: not an index range on the sequence key (see recomputeTargets.ts).
 * $7/$8: only these (key, window start)s; $9/$10: all but these.
 */
const compareSql = (pipeline: WindowedPipeline) => `WITH fresh AS (
  SELECT b.group_key, w.window_start, w.window_end, ${aggregateWindow("b.value")}
    FROM straggler.bronze_events b ${windowsLateral(windowSpecOf(pipeline), "b")}
   WHERE b.pipeline = $1 AND b.status = 'accepted' AND b.seq + 0 <= $2 AND ${notSuperseded("b", "$2")}
     AND ($4::timestamptz IS NULL OR (b.event_time >= $4::timestamptz - $6 * interval '1 millisecond' AND b.event_time < $5))
     AND ($7::text[] IS NULL OR (b.group_key, w.window_start) IN (SELECT * FROM unnest($7::text[], $8::timestamptz[])))
     AND ($9::text[] IS NULL OR (b.group_key, w.window_start) NOT IN (SELECT * FROM unnest($9::text[], $10::timestamptz[])))
   GROUP BY 1, 2, 3
${FINAL_AGAINST_FRESH}
 WHERE $9::text[] IS NULL OR (group_key, window_start) NOT IN (SELECT * FROM unnest($9::text[], $10::timestamptz[]))`;

const aggregate = (n: number | null, sum: string | null, min: string | null, max: string | null): Aggregate | null =>
  n === null ? null : { count: n, sum, min, max };

/**
 * Compares the final windows of `pipeline` with their recompute from accepted
 * bronze rows up to `req.snapshot`, unordered.
 * @throws the database's error; a data exception (SQLSTATE class 22) when a window's aggregate fails
 */
export async function compareFinalWindows(
  client: Queryable,
  pipeline: WindowedPipeline,
  req: CompareRequest,
): Promise<ComparedWindow[]> {
  const { only = null, skip = null } = req;
  const { rows } = await client.query(
    prepared("compare_final_windows", compareSql(pipeline), [
      pipeline.name,
      req.snapshot,
      req.watermark,
      req.range?.from ?? null,
      req.range?.to ?? null,
      longestWindowMs(windowSpecOf(pipeline)),
      only?.map((w) => w.groupKey) ?? null,
      only?.map((w) => w.windowStart) ?? null,
      skip?.map((w) => w.groupKey) ?? null,
      skip?.map((w) => w.windowStart) ?? null,
    ]),
  );
  return rows.map(comparedRow);
}
