/**
 * Which plan a correction's recompute takes (BENCHMARKS.md "Corrections that choose their
 * plan"): per-window reads (src/db/sql/correction/recomputeTargets.ts: one index descent per target
 * window) or one range scan and group-by (src/db/sql/correction/recomputeTargetsDense.ts: every bronze
 * row of the targets' event-time range read once). Their costs, measured on the peers
 * workload at 300,000 events from 560 to 41,100 targets: the per-window plan about
 * `SPARSE_US_PER_TARGET` µs per target; the range scan about `DENSE_US_PER_ROW` µs per
 * bronze row of the range plus `DENSE_US_PER_TARGET` µs per target (the stored window's
 * probe and the hash of the targets, which both plans pay in some form). The dense plan is
 * taken when its estimate is the lower. On the peers workload (about 3 rows per window) it
 * never is, even with every window of a range a target: a per-window read is three index
 * entries; it pays where windows hold many rows each and most of them are targets.
 */
import { windowSpecOf } from "../core/pipelineSpec.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { windowsPerEvent } from "../core/windows.js";
import type { PoolClient } from "../db/pool.js";
import { recomputeTargets } from "../db/sql/correction/recomputeTargets.js";
import {
  readTargetSpread,
  recomputeTargetsDense,
  type TargetSpread,
} from "../db/sql/correction/recomputeTargetsDense.js";

/** Measured cost of the per-window plan, µs per target window (peers workload, BENCHMARKS.md). */
const SPARSE_US_PER_TARGET = 22;
/** Measured cost of the range-scan plan, µs per bronze row in the targets' event-time range (BENCHMARKS.md). */
const DENSE_US_PER_ROW = 1;
/** Measured cost of the range-scan plan, µs per target window (BENCHMARKS.md). */
const DENSE_US_PER_TARGET = 20;

/** Below this many range rows per target the range scan is the cheaper: (SPARSE − DENSE per target) / DENSE per row. */
const DENSE_ROWS_PER_TARGET = (SPARSE_US_PER_TARGET - DENSE_US_PER_TARGET) / DENSE_US_PER_ROW;

/** The recompute's two plans. */
type RecomputePlan = "sparse" | "dense";

/**
 * The cheaper plan for `spread`: dense when `rowsInRange × DENSE_US_PER_ROW + targets × DENSE_US_PER_TARGET` is below
 * `targets × SPARSE_US_PER_TARGET` (µs), that is when the range holds fewer than 2 rows per target.
 * `STRAGGLER_CORRECTION_PLAN=sparse|dense` forces one (for measuring both on the same data).
 */
export function choosePlan(
  spread: TargetSpread,
  forced: string | undefined = process.env.STRAGGLER_CORRECTION_PLAN,
): RecomputePlan {
  if (forced === "sparse" || forced === "dense") return forced;
  const dense = spread.rowsInRange * DENSE_US_PER_ROW + spread.targets * DENSE_US_PER_TARGET;
  return dense < spread.targets * SPARSE_US_PER_TARGET ? "dense" : "sparse";
}

/**
 * Reads the targets' spread and returns the recompute of the chosen plan (run again as is after a failing window is
 * isolated: the plan is chosen once per run).
 */
export async function plannedRecompute(
  client: PoolClient,
  pipeline: PipelineConfig,
  snapshot: number,
): Promise<() => Promise<void>> {
  const perEvent = windowsPerEvent(windowSpecOf(pipeline));
  const spread = await readTargetSpread(client, pipeline.name, perEvent, DENSE_ROWS_PER_TARGET);
  if (choosePlan(spread) === "dense") return () => recomputeTargetsDense(client, pipeline, snapshot);
  return () => recomputeTargets(client, pipeline.name, snapshot);
}
