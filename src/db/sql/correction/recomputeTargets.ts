/**
 * Recomputes every window in `corr_targets` from accepted bronze rows up to
 * the run's snapshot (less those superseded by a row up to it) — a full replacement, never a delta (DESIGN §9) — and
 * keeps in `corr_changes` those whose value differs from the stored one (or
 * that bronze has and the results do not).
 *
 * `b.seq + 0 <= snapshot`: the snapshot bound must not be usable as an index
 * range on the sequence key — without fresh statistics the planner takes it
 * and scans a pipeline's whole history once per window. For the same reason
 * `b.pipeline || ''`: the primary key leads with the pipeline, and a pipeline
 * new since the last ANALYZE looks empty to the planner. The (group key, event
 * time) index of accepted rows is the access path a correction's cost should
 * follow; the pipeline and the value are read from the heap row.
 * The targets are visited in (window, key) order: bronze's heap is in landing
 * order, so the rows of one window of every key share a stretch of heap pages,
 * and each window's pages are read once for all its touched keys, then hit in
 * shared buffers. In (key, window) order, the index's own, the same stretch was
 * read again for each key: on the peers workload at 10M events (about 100 rows
 * per key and window, 9,253 windows touched, heap far larger than shared
 * buffers) the correction took 4.9–5.1 s against 2.6–2.7 s; at 1M 0.80–1.02 s
 * against 0.80–0.88 s (BENCHMARKS.md). The stored window is looked up by its key,
 * one probe of the results' primary key per target (a LATERAL with LIMIT 1):
 * as a plain join, the planner hashed the pipeline's whole results (95,669
 * windows read, spilling to disk, for 2,919 targets), a cost that grows with
 * the results' history instead of the touched windows. At that size both cost
 * about the same (117 ms of hash against 134 ms of cold probes); at ten times
 * the history only the probes stay the same.
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { aggregateWindow, computedAggregates, storedAggregates } from "../fragments/windowAggregates.js";
import { notSupersededOf } from "../fragments/superseded.js";

const RECOMPUTE_TARGETS_SQL = `INSERT INTO corr_changes
SELECT t.group_key, t.window_start, t.window_end, r.revision, ${storedAggregates("r")}, ${computedAggregates("f")}
  FROM (SELECT * FROM corr_targets ORDER BY window_start, window_end, group_key) t
  CROSS JOIN LATERAL (
    SELECT ${aggregateWindow("b.value")}
      FROM straggler.bronze_events b
     WHERE b.pipeline || '' = $1 AND b.group_key = t.group_key AND b.status = 'accepted' AND b.seq + 0 <= $2 AND ${notSupersededOf("b", "$1", "$2", { upTo: "$2" })}
       AND b.event_time >= t.window_start AND b.event_time < t.window_end) f
  LEFT JOIN LATERAL (
    SELECT r.pipeline, r.revision, ${storedAggregates("r")} FROM straggler.window_results_table r
     WHERE r.pipeline = $1 AND r.group_key = t.group_key AND r.window_start = t.window_start AND r.window_end = t.window_end LIMIT 1) r ON true
 WHERE (r.pipeline IS NULL AND f.n > 0)
    OR (r.pipeline IS NOT NULL AND (${storedAggregates("r")}) IS DISTINCT FROM (${computedAggregates("f")}))`;

/**
 * Fills `corr_changes` from `corr_targets` of `pipeline`, reading bronze up to `seq` `snapshot`.
 * @throws a data exception (SQLSTATE class 22) when a window's aggregate fails (isolateTargets.ts in the correction)
 */
export async function recomputeTargets(client: PoolClient, pipeline: string, snapshot: number): Promise<void> {
  await client.query(prepared("recompute_targets", RECOMPUTE_TARGETS_SQL, [pipeline, snapshot]));
}
