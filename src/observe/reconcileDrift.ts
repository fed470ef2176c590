/**
 * The alert `reconcile_drift` (docs/continuous-reconcile.md): fires while reconcile runs found
 * final windows differing from bronze that no correction run has recomputed yet; its value is
 * how many (windows). Judged with the other alerts (src/observe/alerts.ts).
 */
import type { PipelineConfig } from "../config/pipelines.js";

/** What `reconcile_drift` is judged on. */
export interface DriftFacts {
  /** Windows found mismatched and not yet corrected (src/db/sql/reconcile/mismatches.ts `countOpenMismatches`). */
  reconcileMismatched?: number;
}

/** Whether `pipeline` judges `reconcile_drift`: `alerts.reconcileDrift`, else on when `correction.reconcile` is set. */
export function reconcileDriftOn(pipeline: PipelineConfig): boolean {
  return pipeline.alerts.reconcileDrift ?? pipeline.correction.reconcile !== undefined;
}

/** The judgement of `reconcile_drift` on `mismatched` open windows. */
export function judgeDrift(mismatched: number) {
  return {
    alert: "reconcile_drift" as const,
    firing: mismatched > 0,
    value: mismatched,
    threshold: 0,
    message:
      mismatched > 0
        ? `${mismatched} final windows differ from bronze (found by reconcile); the next correction run recomputes them`
        : "no final window found differing from bronze awaits correction",
  };
}
