/**
 * Scheduled reconcile runs inside the service (node-cron), like the correction schedule
 * (src/correction/schedule.ts): every pipeline with `correction.reconcile` runs
 * `runRecordedReconcile` on its `schedule` (5 fields, the process's time zone). Each run is keyed
 * by its scheduled minute, so with several replicas each slot runs once; `noOverlap` keeps a slow
 * run from overlapping the next tick here. `stop()` awaits runs in flight.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import { runRecordedReconcile, type ReconcileRunSummary } from "./reconcileRun.js";
import { scheduleEach } from "./schedule.js";

/** Logs a run: warn when it found mismatches or failed, info otherwise, debug when skipped. */
function logReconcile(log: Logger, s: ReconcileRunSummary): void {
  const fields = {
    pipeline: s.pipeline,
    reconcileRunId: s.runId,
    range: s.range,
    windowsChecked: s.windowsChecked,
    windowsMismatched: s.windowsMismatched,
  };
  if (s.skipped) log.debug(fields, "reconcile slot already run by another replica");
  else if (s.status === "failed") log.warn({ ...fields, error: s.error }, "reconcile run failed");
  else if ((s.windowsMismatched ?? 0) > 0)
    log.warn(
      fields,
      "reconcile run found final windows differing from bronze: the next correction run recomputes them",
    );
  else log.info(fields, "reconcile run finished");
}

/**
 * Schedules every pipeline with `correction.reconcile`.
 * @returns `stop()`, which stops the schedules and awaits the runs in flight
 */
export function scheduleReconciles(pool: Pool, pipelines: PipelineConfig[], log: Logger): { stop(): Promise<void> } {
  return scheduleEach(
    pipelines,
    "reconcile",
    (p) => p.correction.reconcile?.schedule,
    (pipeline, cronSlot) =>
      runRecordedReconcile(pool, pipeline, { trigger: "cron", cronSlot })
        .then((s) => logReconcile(log, s))
        .catch((e) =>
          log.error(
            { err: e, pipeline: pipeline.name },
            "reconcile run could not start or record its outcome (database unreachable)",
          ),
        ),
    (pipeline, expr) =>
      log.info(
        { pipeline: pipeline.name, schedule: expr, sample: pipeline.correction.reconcile?.sample },
        "reconcile scheduled",
      ),
  );
}
