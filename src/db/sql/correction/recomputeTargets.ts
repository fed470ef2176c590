/**
 * Recomputes every window in `corr_targets` from accepted bronze rows up to
 * the run's snapshot (less those superseded by a row up to it) — a full replacement, never a delta (DESIGN §9) — and
 * keeps in `corr_changes` those whose value differs from the stored one (or
 * that bronze has and the results do not).
 *
 * `b.seq + 0 <= snapshot`: the snapshot bound must not be usable as an index
 * range on the sequence key — without fresh statistics the planner takes it
 * and scans a pipeline's whole history once per window. For the same reason
 * `b.pipeline || ''`: the (pipeline, seq) index leads with the pipeline, and a pipeline
 * new since the last ANALYZE looks empty to the planner. The (group key, event
 * time) index of accepted rows is the access path a correction's cost should
 * follow; the pipeline and the value are read from the heap row.
 * The targets are read a window at a time: one bitmap scan of the (group key, event time) index
 * for all the touched keys of a window (`group_key = ANY(keys)`), grouped by key. Bronze's heap
 * is in landing order, so the rows of one window of every key share a stretch of heap pages:
 * read this way, each page of the stretch is visited once for all the window's touched keys.
 * One scan per target visited the same stretch again for each key: on the peers workload at
 * 10M events (about 100 rows per key and window, 9,253 targets in 1,006 windows) 687,842 heap
 * page visits against 162,427, the statement 1,360 → 1,280 ms (most of what is left is reading
 * those pages into shared buffers); at 1M 78,078 against 25,402 visits, 177–514 → 126–146 ms
 * (BENCHMARKS.md, round eleven). Before that, in (key, window) order, the index's own, the
 * stretch was read once per key and window from disk: 4.9–5.1 s against 2.6–2.7 s at 10M.
 * The frame around the read (a target with no row, the stored window's probe) is the dense plan's
 * too (fragments/targetChanges.ts). The stored window is looked up by its key,
 * one probe of the results' primary key per target (a LATERAL with LIMIT 1):
 * as a plain join, the planner hashed the pipeline's whole results (95,669
 * windows read, spilling to disk, for 2,919 targets), a cost that grows with
 * the results' history instead of the touched windows. At that size both cost
 * about the same (117 ms of hash against 134 ms of cold probes); at ten times
 * the history only the probes stay the same.
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { aggregateWindow } from "../fragments/windowAggregates.js";
import { targetChangesSql } from "../fragments/targetChanges.js";
import { notSupersededOf } from "../fragments/superseded.js";

const RECOMPUTE_TARGETS_SQL = targetChangesSql(`
    SELECT w.window_start, w.window_end, a.*
      FROM (SELECT window_start, window_end, array_agg(group_key) AS keys FROM corr_targets
             GROUP BY window_start, window_end ORDER BY window_start, window_end) w
      CROSS JOIN LATERAL (
        SELECT b.group_key, ${aggregateWindow("b.value")}
          FROM straggler.bronze_events b
         WHERE b.pipeline || '' = $1 AND b.group_key = ANY(w.keys) AND b.status = 'accepted' AND b.seq + 0 <= $2
           AND ${notSupersededOf("b", "$1", "$2", { upTo: "$2" })}
           AND b.event_time >= w.window_start AND b.event_time < w.window_end
         GROUP BY b.group_key) a`);

/**
 * Fills `corr_changes` from `corr_targets` of `pipeline`, reading bronze up to `seq` `snapshot`.
 * @throws a data exception (SQLSTATE class 22) when a window's aggregate fails (isolateTargets.ts in the correction)
 */
export async function recomputeTargets(client: PoolClient, pipeline: string, snapshot: number): Promise<void> {
  await client.query(prepared("recompute_targets", RECOMPUTE_TARGETS_SQL, [pipeline, snapshot]));
}
