/**
 * Two parts of a pipeline's status (`status --json`, `GET /pipelines`): what holds its watermark
 * (src/stream/watermarkHolder.ts) and its last reconcile run (src/correction/reconcileRun.ts).
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Queryable } from "../db/pool.js";
import { readLastReconcileRuns, type ReconcileRunRow } from "../db/sql/reconcile/runs.js";
import { watermarkHolder, type WatermarkHolder } from "../stream/watermarkHolder.js";

export interface PipelineExtras {
  /** Null before the first batch. */
  watermarkHolder: WatermarkHolder | null;
  /** The last finished reconcile run; null before any. */
  lastReconcile: ReconcileRunRow | null;
}

export async function pipelineExtras(client: Queryable, pipeline: PipelineConfig): Promise<PipelineExtras> {
  const [holder, runs] = await Promise.all([
    watermarkHolder(client, pipeline),
    readLastReconcileRuns(client, [pipeline.name]),
  ]);
  return { watermarkHolder: holder, lastReconcile: runs.get(pipeline.name) ?? null };
}
