/**
 * One micro-batch of one pipeline (DESIGN §2–6), in one transaction:
 *
 *   lock results → guard the policy (the configured one must be the live
 *     results' one: src/stream/policyGuard.ts) → read checkpoint → pick the next bronze `seq` range
 *   → judge the hold rules on its rows (src/lifecycle/hold.ts)
 *   → assign windows → split (event, window) pairs by Spark's late rule
 *     (window end <= watermark of earlier batches)
 *   → late pairs: record for correction; on-time pairs: combine per key and
 *     MERGE into the results (update mode)
 *   → the windows of versions the batch's rows superseded (admission.dedupe
 *     latest): recompute the open ones, register the others for correction
 *   (session windows: the steps of src/stream/sessionBatch.ts instead, from
 *     assigning windows to here)
 *   → advance the watermark → finalize windows whose end <= new watermark
 *   → write checkpoint and progress → commit.
 *
 * Because writes, checkpoint and progress commit together, a crash at any
 * point replays the batch exactly once. Every statement is a step of the
 * query layer (`src/db/sql/`); this module only orders them.
 */
import type { PipelineLease } from "../cluster/fencing.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { sessionGapOf, watermarkSettingsOf, windowSpecOf } from "../config/pipelines.js";
import { formatInstant, isoToUs } from "../core/timestamps.js";
import { advanceInputs } from "../core/watermark.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import { assignBatchWindows } from "../db/sql/assignBatchWindows.js";
import { finalizeWindows } from "../db/sql/finalizeWindows.js";
import { lockResults } from "../db/sql/lockResults.js";
import { mergeWindows } from "../db/sql/mergeWindows.js";
import { readBatchInput, type BatchInput } from "../db/sql/readBatchInput.js";
import { readBatchInputs } from "../db/sql/readBatchInputs.js";
import { checkpointInputs, inputStates } from "../db/sql/checkpointInputs.js";
import { readCheckpointForUpdate, type Checkpoint } from "../db/sql/readCheckpoint.js";
import { registerLatePairs, type LatePairs } from "../db/sql/registerLatePairs.js";
import { saveCheckpoint } from "../db/sql/saveCheckpoint.js";
import { selectBatchRange, type BatchRange } from "../db/sql/selectBatchRange.js";
import { correctSupersededWindows } from "../db/sql/supersededWindows.js";
import { inputProgress, readLastProgressTime, writeProgress, type BatchProgress, type InputProgress, type TriggerKind } from "../db/sql/writeProgress.js";
import { FailingWindowsError, mergeGuarded, quarantineFailingWindows } from "./isolateWindows.js";
import { guardPolicy } from "./policyGuard.js";
import { streamSessions, type WindowSteps } from "./sessionBatch.js";
import { applyHoldRules, type Hold } from "../lifecycle/hold.js";

export type { BatchProgress, TriggerKind };

/**
 * `untilSeq`: the batch reads no bronze row past this `seq` (a replay streams one span while it lands the next).
 * `lease`: the pipeline's lease a replica runs the batch under; its fence is the transaction's last statement (src/cluster/fencing.ts).
 */
export interface BatchOptions { untilSeq?: number; lease?: Pick<PipelineLease, "assertHeld"> }

/** A batch's progress, with the hold its rows tripped (a rule of the pipeline's `hold` block), if any. */
export type BatchResult = BatchProgress & { holdOpened?: Hold };

/** Instants travel as ISO strings (µs kept) and are compared as epoch µs. */
const us = (iso: string | null): bigint | null => (iso === null ? null : isoToUs(iso));
const iso = (u: bigint | null): string | null => (u === null ? null : formatInstant(u));
const later = (a: string | null, b: string | null): string | null => (b === null || (a !== null && us(a)! >= us(b)!) ? a : b);

/**
 * Runs the next micro-batch of `pipeline`, if bronze has rows past the checkpoint.
 * A window whose MERGE fails with a data exception (SQLSTATE class 22) does
 * not stop the pipeline: its rows in the batch are quarantined
 * (`INVALID_VALUE`), the window is recorded in `straggler.failed_windows`, and
 * the batch runs without them (`src/stream/isolateWindows.ts`).
 * @returns the batch's progress, or null when there was nothing to do (an empty batch changes nothing)
 * @throws PolicyRefusedError when the configured policy differs from the live results' (nothing is written)
 * @throws LeaseLostError when `opts.lease` is no longer held (nothing is written)
 * @throws database errors; the transaction is rolled back and the batch will run again
 */
export async function runBatch(pool: Pool, pipeline: PipelineConfig, trigger: TriggerKind, opts: BatchOptions = {}): Promise<BatchResult | null> {
  for (;;) {
    try {
      return await runBatchOnce(pool, pipeline, trigger, opts);
    } catch (e) {
      // A window whose MERGE fails (e.g. a sum overflowing numeric): quarantine its rows, record it, run the batch again.
      if (!(e instanceof FailingWindowsError)) throw e;
      // Every round quarantines rows (or finds the batch taken): it cannot loop without progress.
      if ((await quarantineFailingWindows(pool, pipeline, e)) === 0) throw e;
    }
  }
}

async function runBatchOnce(pool: Pool, pipeline: PipelineConfig, trigger: TriggerKind, opts: BatchOptions): Promise<BatchResult | null> {
  const started = performance.now();
  const name = pipeline.name, gapMs = sessionGapOf(pipeline);
  return withTransaction(pool, async (client) => {
    await lockResults(client, name);
    await guardPolicy(client, pipeline);
    const checkpoint = await readCheckpointForUpdate(client, name);
    const range = await selectBatchRange(client, name, checkpoint.lastSeq, pipeline.trigger.maxRowsPerBatch, opts.untilSeq);
    if (range === null) return null;
    const batchId = checkpoint.batchId + 1;
    const input = await readBatchInput(client, name, range);
    // A hold rule tripped by this batch's rows keeps the results published before it.
    const holdOpened = await applyHoldRules(client, pipeline, { batchId, range, input });
    const { late, numRowsUpdated } = gapMs !== undefined
      ? await streamSessions(client, pipeline, gapMs, { batchId, range, watermarkUs: us(checkpoint.watermark) })
      : await streamWindows(client, pipeline, { batchId, range, checkpoint });
    // §6: the watermark advances on this batch's rows, then closes windows. Each input's
    // watermark advances on its own rows; the pipeline's is chosen from them (min or max,
    // idle inputs left out) and never moves backwards (docs/DESIGN.md "Several inputs").
    const maxEventTime = later(checkpoint.maxEventTime, input.eventTime.max);
    const advanced = advanceInputs(inputStates(checkpoint.inputs), us(checkpoint.watermark), await readBatchInputs(client, name, range), watermarkSettingsOf(pipeline));
    const nextWatermark = iso(advanced.watermarkUs);
    const { finalized: numRowsFinalized, open: numRowsTotal } = await finalizeWindows(client, name, nextWatermark);
    const previous = await readLastProgressTime(client, name);
    const inputs = inputProgress(advanced);
    const progress = batchProgress({ name, batchId, trigger, range, input, checkpoint, nextWatermark, late, numRowsUpdated, numRowsFinalized, numRowsTotal, inputs }, started, previous);
    await saveCheckpoint(client, name, { batchId, lastSeq: range.lastSeq, maxEventTime, watermark: nextWatermark, inputs: checkpointInputs(advanced.inputs) });
    await writeProgress(client, progress);
    await opts.lease?.assertHeld(client); // fencing: a replica that lost the lease commits no batch (LeaseLostError rolls it back)
    return holdOpened ? { ...progress, holdOpened } : progress;
  });
}

/** The window steps of fixed-length and calendar windows (DESIGN §3–5); session windows take `streamSessions`. */
async function streamWindows(client: PoolClient, pipeline: PipelineConfig, b: { batchId: number; range: BatchRange; checkpoint: Checkpoint }): Promise<WindowSteps> {
  const name = pipeline.name, spec = windowSpecOf(pipeline), { batchId, range, checkpoint } = b;
  // §3–4: pairs are late against the watermark of earlier batches only.
  await assignBatchWindows(client, name, spec, range, us(checkpoint.watermark));
  const late = await registerLatePairs(client, name, batchId);
  const numRowsUpdated = await mergeGuarded(client, { lastSeq: checkpoint.lastSeq, batchId }, () => mergeWindows(client, name, batchId));
  // Amended events (admission.dedupe: latest): the windows of versions this batch's rows superseded lose them.
  await correctSupersededWindows(client, name, spec, range, batchId);
  return { late, numRowsUpdated };
}

interface BatchOutcome {
  name: string;
  batchId: number;
  trigger: TriggerKind;
  range: BatchRange;
  input: BatchInput;
  checkpoint: Checkpoint;
  nextWatermark: string | null;
  late: LatePairs;
  numRowsUpdated: number;
  numRowsFinalized: number;
  numRowsTotal: number;
  inputs: InputProgress[];
}

/** The batch's progress (Spark's StreamingQueryProgress); rates from `started` (performance.now()) and the previous batch's ISO `timestamp`. */
function batchProgress(b: BatchOutcome, started: number, previous: string | null): BatchProgress {
  const durationMs = Math.max(1, Math.round(performance.now() - started));
  const now = Date.now();
  const sincePrevious = previous === null ? null : (now - Date.parse(previous)) / 1000;
  const rows = b.input.numInputRows;
  return {
    pipeline: b.name,
    batchId: b.batchId,
    trigger: b.trigger,
    timestamp: new Date(now).toISOString(),
    startOffset: b.range.afterSeq,
    endOffset: b.range.lastSeq,
    numInputRows: rows,
    numQuarantinedRows: b.input.numQuarantinedRows,
    inputRowsPerSecond: sincePrevious && sincePrevious > 0 ? rows / sincePrevious : null,
    processedRowsPerSecond: (rows * 1000) / durationMs,
    durationMs,
    eventTime: { ...b.input.eventTime, watermark: b.checkpoint.watermark },
    nextWatermark: b.nextWatermark,
    numRowsDroppedByWatermark: b.late.pairs,
    numLateWindows: b.late.windows,
    numRowsUpdated: b.numRowsUpdated,
    numRowsFinalized: b.numRowsFinalized,
    numRowsTotal: b.numRowsTotal,
    inputs: b.inputs,
  };
}
