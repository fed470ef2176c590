/**
 * The frame both of the correction's recompute plans share (src/db/sql/correction/recomputeTargets.ts, the
 * per-window reads; recomputeTargetsDense.ts, the range scan): every target window of `corr_targets` with its
 * recomputed aggregates and its stored window (one probe of the results' primary key per target, a LATERAL with
 * LIMIT 1), kept in `corr_changes` when they differ or when bronze has the window and the results do not. A target
 * the recompute found no row for gets a count of 0 and null sum, min and max, as an aggregate over no rows gives them.
 */
import { storedAggregates } from "./windowAggregates.js";
import { liveVersion } from "./liveVersion.js";

/**
 * The `INSERT INTO corr_changes` of the targets' changes; $1 is the pipeline.
 * @param computed a subquery yielding `group_key, window_start, window_end, n, s, lo, hi` for the targets bronze has rows for
 */
export function targetChangesSql(computed: string): string {
  const after = "coalesce(f.n, 0), f.s, f.lo, f.hi";
  return `INSERT INTO corr_changes
SELECT t.group_key, t.window_start, t.window_end, r.revision, ${storedAggregates("r")}, ${after}
  FROM corr_targets t
  LEFT JOIN (${computed}) f
    ON f.group_key = t.group_key AND f.window_start = t.window_start AND f.window_end = t.window_end
  LEFT JOIN LATERAL (
    SELECT r.pipeline, r.revision, ${storedAggregates("r")} FROM straggler.window_results_table r
     WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND r.group_key = t.group_key AND r.window_start = t.window_start
       AND r.window_end = t.window_end LIMIT 1) r ON true
 WHERE (r.pipeline IS NULL AND f.n > 0)
    OR (r.pipeline IS NOT NULL AND (${storedAggregates("r")}) IS DISTINCT FROM (${after}))`;
}
