/**
 * The correction's failure path for windows whose recompute fails with a data
 * exception (see `src/db/windowFailures.ts`), e.g. late rows accepted under an
 * older policy whose sum overflows numeric. The recompute runs under a
 * savepoint; when it fails, the failing target windows are found by
 * bisection, the window's late rows (those the stream never applied, up to
 * the run's snapshot) are quarantined (`INVALID_VALUE`) and the window is
 * recorded as failed; the recompute then runs again, so the run goes on and
 * succeeds for every other window. A window that still fails with no late
 * rows left to blame is dropped from the run's targets (recorded, unchanged).
 * Other final windows holding a quarantined row (sliding windows) join the
 * targets and are recomputed without it.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { PoolClient } from "../db/pool.js";
import { trySavepoint } from "../db/savepoint.js";
import { addTargetsOfRows } from "../db/sql/correction/addTargetsOfRows.js";
import { dropTarget } from "../db/sql/correction/dropTarget.js";
import { keepTargets } from "../db/sql/correction/keepTargets.js";
import { listTargets } from "../db/sql/correction/listTargets.js";
import { readLateSeqs } from "../db/sql/stream/readLateSeqs.js";
import { recordWindowFailure } from "../db/sql/stream/recordWindowFailure.js";
import { isolateFailing, type Failing } from "../db/windowFailures.js";
import { plannedRecompute } from "./plan.js";
import type { KeyedWindow } from "../db/sql/readmodel/windows.js";

/** What a correction run reads: its id, the bronze `seq` it reads up to, and the stream's watermark (ISO 8601). */
export interface RunSnapshot {
  runId: number;
  snapshot: number;
  watermark: string;
}

/**
 * Recomputes the run's targets (`corr_targets`) into `corr_changes` until it succeeds, isolating failing windows as above.
 * @returns the number of windows recorded as failed
 * @throws the original error when no single window fails alone; any other error unchanged
 */
export async function recomputeGuarded(
  client: PoolClient,
  pipeline: PipelineConfig,
  run: RunSnapshot,
): Promise<number> {
  const recompute = await plannedRecompute(client, pipeline, run.snapshot);
  let failed = 0;
  for (;;) {
    const whole = await trySavepoint(client, "straggler_recompute", recompute);
    if (whole.error === undefined) return failed;
    const failing = await isolateFailing(client, await listTargets(client), whole.error, async (subset) => {
      await keepTargets(client, subset);
      await recompute();
    });
    if (failing.length === 0) throw whole.error;
    for (const f of failing) await quarantineLateRows(client, pipeline, run, f);
    failed += failing.length;
  }
}

/**
 * Quarantines a failing window's late rows and records it; adds the other final windows holding
 * those rows to the targets, or drops the window from them when it has no late rows to blame.
 */
async function quarantineLateRows(
  client: PoolClient,
  pipeline: PipelineConfig,
  run: RunSnapshot,
  f: Failing<KeyedWindow>,
): Promise<void> {
  const seqs = await readLateSeqs(client, pipeline.name, f.item, run.snapshot);
  await recordWindowFailure(
    client,
    pipeline.name,
    { ...f.item, sqlstate: f.sqlstate, error: f.error, seqs },
    { phase: "correction", runId: run.runId },
  );
  if (seqs.length === 0) await dropTarget(client, f.item);
  else await addTargetsOfRows(client, pipeline, seqs, run.watermark);
}
