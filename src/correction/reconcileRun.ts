/**
 * One recorded reconcile run (docs/continuous-reconcile.md): checks a slice of a pipeline's
 * final windows against bronze with `reconcile` (src/correction/reconcile.ts), records the run
 * in `straggler.reconcile_runs` and each window found differing in `straggler.reconcile_mismatches`,
 * where the next correction run picks it up.
 *
 * The slice: with `sample: all`, all time; with `sample: N%`, N % of the event time between the
 * earliest instant of the pipeline (its first accepted event or stored window) and the watermark,
 * starting where the previous run with that sample stopped (a rotating cursor), back at the
 * earliest instant once the cursor reaches the watermark — so runs cover the whole pipeline over
 * time, and windows that become final later are reached as the watermark moves on.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { keyIn } from "../core/keys.js";
import type { Pool } from "../db/pool.js";
import { readCheckpoint } from "../db/sql/stream/readCheckpoint.js";
import { recordMismatches } from "../db/sql/reconcile/mismatches.js";
import {
  claimReconcileRun,
  finishReconcileRun,
  readEarliestInstant,
  readReconcileCursor,
  type ReconcileOutcome,
  type ReconcileTrigger,
} from "../db/sql/reconcile/runs.js";
import { reconcile } from "./reconcile.js";

/** The summary of a recorded reconcile run; `skipped` when its cron slot was already claimed (another replica). */
export interface ReconcileRunSummary extends ReconcileOutcome {
  runId: number | null;
  pipeline: string;
  sample: string;
  skipped: boolean;
}

/** The share of event time `sample` (`all` or `N%`) stands for, in (0, 1]. */
export function sampleShare(sample: string): number {
  return sample === "all" ? 1 : Number(sample.slice(0, -1)) / 100;
}

/**
 * The slice a run with `sample` checks, from the earliest instant, the watermark and the previous
 * run's end (ISO 8601, null when none); null = all time.
 */
export function nextSlice(
  sample: string,
  earliest: string | null,
  watermark: string | null,
  cursor: string | null,
): { from: string; to: string } | null {
  if (sample === "all" || earliest === null || watermark === null) return null;
  const startMs = Date.parse(earliest);
  const endMs = Date.parse(watermark);
  if (endMs <= startMs) return { from: earliest, to: watermark };
  const widthMs = Math.max(1, Math.ceil((endMs - startMs) * sampleShare(sample)));
  const cursorMs = cursor === null ? NaN : Date.parse(cursor);
  const fromMs = Number.isNaN(cursorMs) || cursorMs >= endMs || cursorMs < startMs ? startMs : cursorMs;
  return { from: new Date(fromMs).toISOString(), to: new Date(Math.min(fromMs + widthMs, endMs)).toISOString() };
}

/**
 * Runs and records one reconcile of `pipeline` with its configured sample (`all` without `correction.reconcile`).
 * A failure of the check (an archived range, a zone PostgreSQL does not know, the database) is recorded as
 * a failed run and returned, never thrown.
 * @throws the database's error when the run cannot be claimed or recorded
 */
export async function runRecordedReconcile(
  pool: Pool,
  pipeline: PipelineConfig,
  req: { trigger: ReconcileTrigger; cronSlot?: string },
): Promise<ReconcileRunSummary> {
  const sample = pipeline.correction.reconcile?.sample ?? "all";
  const base = { pipeline: pipeline.name, sample, ...emptyOutcome() };
  const runId = await claimReconcileRun(pool, {
    pipeline: pipeline.name,
    trigger: req.trigger,
    cronSlot: req.cronSlot ?? null,
    sample,
  });
  if (runId === null) return { ...base, runId, skipped: true };
  let outcome: ReconcileOutcome;
  try {
    outcome = await checkSlice(pool, pipeline, runId, sample);
  } catch (e) {
    outcome = { ...emptyOutcome(), status: "failed", error: (e as Error).message };
  }
  await finishReconcileRun(pool, runId, outcome);
  return { ...base, ...outcome, runId, skipped: false };
}

async function checkSlice(
  pool: Pool,
  pipeline: PipelineConfig,
  runId: number,
  sample: string,
): Promise<ReconcileOutcome> {
  const checkpoint = await readCheckpoint(pool, pipeline.name);
  const [earliest, cursor] = await Promise.all([
    readEarliestInstant(pool, pipeline.name),
    readReconcileCursor(pool, pipeline.name, sample),
  ]);
  const range = nextSlice(sample, earliest, checkpoint?.watermark ?? null, cursor);
  const report = await reconcile(pool, pipeline, range ?? undefined);
  const found = report.mismatches.map((m) => ({ ...m, groupKey: keyIn(m.groupKey) }));
  await recordMismatches(pool, runId, pipeline.name, found);
  return {
    status: "succeeded",
    range,
    bronzeSnapshot: report.bronzeSnapshot,
    watermark: report.watermark,
    windowsChecked: report.windowsChecked,
    windowsMismatched: found.length,
    windowsFailed: report.failedWindows.length,
    ledgerBalanced: report.ledger.balanced,
    error: null,
  };
}

function emptyOutcome(): ReconcileOutcome {
  return {
    status: "succeeded",
    range: null,
    bronzeSnapshot: null,
    watermark: null,
    windowsChecked: null,
    windowsMismatched: null,
    windowsFailed: null,
    ledgerBalanced: null,
    error: null,
  };
}
