/**
 * One micro-batch of one pipeline (DESIGN §2–6), in one transaction:
 *
 *   lock results → read the checkpoint (locked), the live results' policy and
 *     when the previous batch ran (src/db/sql/stream/openBatch.ts) → guard the policy
 *     (the configured one must be the live results' one: src/guards/policy.ts)
 *   → read the batch: pick the next bronze `seq` range, describe its input,
 *     assign windows and split (event, window) pairs by Spark's late rule
 *     (window end <= watermark of earlier batches), in one statement
 *     (src/db/sql/stream/readBatch.ts)
 *   → judge the hold rules on its rows (src/lifecycle/hold.ts)
 *   → late pairs (if any): record for correction; on-time pairs: combine per
 *     key and MERGE into the results (update mode)
 *   → the windows of versions the batch's rows superseded (admission.dedupe
 *     latest; only when it holds such rows): recompute the open ones, register
 *     the others for correction
 *   (session windows: the steps of src/stream/sessionBatch.ts instead, from
 *     assigning windows to here)
 *   (each step that changes a window writes its change-feed row in the same
 *     statement; the feed's NOTIFY is queued when there were any: docs/change-feed.md)
 *   → advance the watermark → finalize windows whose end <= new watermark,
 *     write checkpoint and progress, in one statement (src/db/sql/stream/closeBatch.ts)
 *   → under a replica's lease, its fence (src/cluster/fencing.ts) → commit.
 *
 * Because writes, checkpoint and progress commit together, a crash at any
 * point replays the batch exactly once. Every statement is a step of the
 * query layer (`src/db/sql/`); this module only orders them. A batch without
 * late pairs nor superseded versions is five round trips: BEGIN with the lock
 * and openBatch's read, readBatch, MERGE, closeBatch, COMMIT (and the lease's
 * fence before COMMIT when a replica runs it under its lease).
 */
import type { QueryResult } from "pg";
import type { PipelineLease } from "../cluster/fencing.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { aggregatesOnTime, sessionGapOf, watermarkSettingsOf, windowSpecOf } from "../config/pipelines.js";
import { formatInstant, isoToUs } from "../core/instants.js";
import { advanceInputs } from "../core/watermark.js";
import { isDataException } from "../db/errors.js";
import { inTransaction, type Pool, type PoolClient } from "../db/pool.js";
import { checkpointInputs, inputStates } from "../db/sql/stream/checkpointInputs.js";
import { COMMIT_WITHOUT_FLUSH_WAIT_SQL } from "../db/sql/ingest/commitWithoutFlushWait.js";
import { closeBatch } from "../db/sql/stream/closeBatch.js";
import { beginLockingResults } from "../db/sql/stream/lockResults.js";
import { mergeWindows } from "../db/sql/stream/mergeWindows.js";
import { openBatchFrom, openBatchText } from "../db/sql/stream/openBatch.js";
import { ensureBatchPairs, type BatchInput, type BatchRange, type BatchRead } from "../db/sql/stream/readBatch.js";
import type { LandedSpan } from "../db/sql/stream/feedBatch.js";
import { batchInput } from "./batchInput.js";
import type { Checkpoint } from "../db/sql/stream/readCheckpoint.js";
import { registerLatePairs, type LatePairs } from "../db/sql/stream/registerLatePairs.js";
import { notifyChanges } from "../db/sql/feed/notifyChanges.js";
import { correctSupersededWindows } from "../db/sql/correction/supersededWindows.js";
import {
  inputProgress,
  type BatchProgress,
  type InputProgress,
  type TriggerKind,
} from "../db/sql/stream/writeProgress.js";
import { FailingWindowsError, mergeGuarded, quarantineFailingWindows } from "./isolateWindows.js";
import { applyHoldRules, guardPolicy, type PolicyAdoption } from "../guards/index.js";
import { streamSessions, type WindowSteps } from "./sessionBatch.js";
import type { Hold } from "../lifecycle/hold.js";

export type { BatchProgress, TriggerKind };

/**
 * `untilSeq`: the batch reads no bronze row past this `seq` (a replay streams one span while it lands the next).
 * `lease`: the pipeline's lease a replica runs the batch under; its fence is the transaction's last statement (src/cluster/fencing.ts).
 */
export interface BatchOptions {
  untilSeq?: number;
  lease?: Pick<PipelineLease, "assertHeld">;
  /** Called once the batch's transaction has committed, when its policy guard adopted the configured policy (src/guards/policy.ts). */
  onPolicyAdopted?: (adoption: PolicyAdoption) => void;
  /** The span a replay just landed, as classified (src/stream/batchInput.ts): the batch of exactly its rows reads none of them back. */
  landed?: LandedSpan;
  /**
   * The batch's COMMIT returns without waiting for its WAL flush (src/db/sql/ingest/commitWithoutFlushWait.ts): a replay's
   * batches, whose replay flushes once at its end. Still atomic and in commit order: a crash of the server may undo the
   * last fraction of a second of batches whole, with the landings after them, and a resumed replay runs them again.
   */
  commitWithoutFlushWait?: boolean;
}

/**
 * A batch's progress, with the hold its rows tripped (a rule of the pipeline's `hold` block), if any, and
 * whether it caught up: it took fewer rows than `trigger.maxRowsPerBatch`, so bronze held no row past it
 * (up to `untilSeq`) when it was read and a batch more would find only what landed since. `caughtUp` is
 * not enumerable: the progress's shape is what is printed and stored.
 */
export type BatchResult = BatchProgress & { holdOpened?: Hold; readonly caughtUp: boolean };

/** `progress` as a BatchResult, its `caughtUp` flag set (not enumerable). */
function withCaughtUp(progress: Omit<BatchResult, "caughtUp">, caughtUp: boolean): BatchResult {
  return Object.defineProperty(progress, "caughtUp", { value: caughtUp, enumerable: false }) as BatchResult;
}

/** Instants travel as ISO strings (µs kept) and are compared as epoch µs. */
const us = (iso: string | null): bigint | null => (iso === null ? null : isoToUs(iso));
const iso = (u: bigint | null): string | null => (u === null ? null : formatInstant(u));
const later = (a: string | null, b: string | null): string | null =>
  b === null || (a !== null && us(a)! >= us(b)!) ? a : b;

/** The batch's MERGE failed with a data exception outside a savepoint: the batch runs again with its MERGE guarded. */
class UnguardedMergeFailed extends Error {
  override name = "UnguardedMergeFailed";
}

/**
 * Runs the next micro-batch of `pipeline`, if bronze has rows past the checkpoint.
 * A window whose MERGE fails with a data exception (SQLSTATE class 22) does
 * not stop the pipeline: its rows in the batch are quarantined
 * (`INVALID_VALUE`), the window is recorded in `straggler.failed_windows`, and
 * the batch runs without them (`src/stream/isolateWindows.ts`). The MERGE runs
 * without a savepoint first (two round trips fewer); when it fails so, the
 * batch is rolled back whole and runs again with its MERGE under one.
 * @returns the batch's progress, or null when there was nothing to do (an empty batch changes nothing)
 * @throws PolicyRefusedError when the configured policy differs from the live results' (nothing is written)
 * @throws LeaseLostError when `opts.lease` is no longer held (nothing is written)
 * @throws database errors; the transaction is rolled back and the batch will run again
 */
export async function runBatch(
  pool: Pool,
  pipeline: PipelineConfig,
  trigger: TriggerKind,
  opts: BatchOptions = {},
): Promise<BatchResult | null> {
  let guarded = false;
  for (;;) {
    try {
      return await runBatchOnce(pool, pipeline, trigger, opts, guarded);
    } catch (e) {
      if (e instanceof UnguardedMergeFailed) {
        guarded = true;
        continue;
      }
      // A window whose MERGE fails (e.g. a sum overflowing numeric): quarantine its rows, record it, run the batch again.
      if (!(e instanceof FailingWindowsError)) throw e;
      // Every round quarantines rows (or finds the batch taken): it cannot loop without progress.
      if ((await quarantineFailingWindows(pool, pipeline, e, opts.lease)) === 0) throw e;
    }
  }
}

async function runBatchOnce(
  pool: Pool,
  pipeline: PipelineConfig,
  trigger: TriggerKind,
  opts: BatchOptions,
  guarded: boolean,
): Promise<BatchResult | null> {
  const started = performance.now();
  const name = pipeline.name,
    gapMs = sessionGapOf(pipeline);
  const client = await pool.connect();
  let adopted: PolicyAdoption | undefined;
  try {
    if (gapMs === undefined) await ensureBatchPairs(client); // once per connection, outside the batch's transaction
    const result = await inTransaction(
      client,
      async (_, opened) => {
        // BEGIN, the results lock and the batch's first read came back together (the third answer is the read).
        const { checkpoint, live, previous } = await openBatchFrom(client, name, (opened as QueryResult[])[2]);
        adopted = (await guardPolicy(client, pipeline, live)).adopted;
        const batchId = checkpoint.batchId + 1;
        // The on-time pairs aggregated as they are read, one row per (key, window), unless the batch needs them one by
        // one: a guarded MERGE isolates failing windows by their rows, a lateness histogram counts each pair.
        const aggregateOnTime = !guarded && aggregatesOnTime(pipeline);
        const read = await batchInput(client, pipeline, checkpoint, { ...opts, aggregateOnTime }).catch(
          (e: unknown) => {
            // A sum that fails as the pairs are aggregated is the MERGE's failure come early: run the batch guarded.
            throw aggregateOnTime && isDataException(e)
              ? new UnguardedMergeFailed("the batch's aggregates failed with a data exception", { cause: e })
              : e;
          },
        );
        if (read === null) return null;
        const { range, input } = read;
        // A hold rule tripped by this batch's rows keeps the results published before it.
        const holdOpened = await applyHoldRules(client, pipeline, { batchId, range, input });
        // §6: the watermark advances on this batch's rows, then closes windows. Each input's
        // watermark advances on its own rows; the pipeline's is chosen from them (min or max,
        // idle inputs left out) and never moves backwards (docs/DESIGN.md "Several inputs").
        // It comes from this batch's input alone, so it is known before the MERGE, which writes
        // final the windows it touches that it has passed (never used for the late rule).
        const maxEventTime = later(checkpoint.maxEventTime, input.eventTime.max);
        const advanced = advanceInputs(
          inputStates(checkpoint.inputs),
          us(checkpoint.watermark),
          read.inputs,
          watermarkSettingsOf(pipeline),
        );
        const nextWatermark = iso(advanced.watermarkUs);
        // Not when the batch supersedes versions (admission.dedupe: latest): their open windows are recomputed after the MERGE, so they stay open until closeBatch.
        const finalUpToUs = gapMs === undefined && !read.supersedes ? advanced.watermarkUs : null;
        const { late, numRowsUpdated } =
          gapMs !== undefined
            ? await streamSessions(client, pipeline, gapMs, { batchId, range, watermarkUs: us(checkpoint.watermark) })
            : await streamWindows(client, pipeline, { batchId, checkpoint, read, guarded, finalUpToUs });
        // The batch's changes are in the feed (written beside its MERGE): listeners hear of them when it commits.
        if (pipeline.feed.enabled && (numRowsUpdated > 0 || read.supersedes)) await notifyChanges(client, name);
        const inputs = inputProgress(advanced);
        const progress = batchProgress(
          { name, batchId, trigger, range, input, checkpoint, nextWatermark, late, numRowsUpdated, inputs },
          started,
          previous,
        );
        const { finalized, open } = await closeBatch(
          client,
          progress,
          { maxEventTime, inputs: checkpointInputs(advanced.inputs) },
          finalUpToUs,
          !pipeline.lateness.histogram ? "none" : gapMs === undefined ? "windows" : "lateness",
        );
        await opts.lease?.assertHeld(client); // fencing: a replica that lost the lease commits no batch (LeaseLostError rolls it back)
        const closed = {
          ...progress,
          numRowsFinalized: finalized,
          numRowsTotal: open,
          ...(holdOpened ? { holdOpened } : {}),
        };
        return withCaughtUp(closed, read.rows < pipeline.trigger.maxRowsPerBatch);
      },
      `${beginLockingResults(name)}; ${openBatchText(name)}${opts.commitWithoutFlushWait ? `; ${COMMIT_WITHOUT_FLUSH_WAIT_SQL}` : ""}`,
    ); // BEGIN, the results lock and the batch's first read: one round trip
    if (adopted) opts.onPolicyAdopted?.(adopted); // committed (an empty batch commits its guard's writes too)
    return result;
  } finally {
    client.release();
  }
}

/** The window steps of fixed-length and calendar windows (DESIGN §3–5), after `readBatch` filled the pairs table; session windows take `streamSessions`. */
async function streamWindows(
  client: PoolClient,
  pipeline: PipelineConfig,
  b: { batchId: number; checkpoint: Checkpoint; read: BatchRead; guarded: boolean; finalUpToUs: bigint | null },
): Promise<WindowSteps> {
  const name = pipeline.name,
    { batchId, checkpoint, read } = b;
  // §3–4: pairs are late against the watermark of earlier batches only (readBatch marked them).
  const late = read.latePairs > 0 ? await registerLatePairs(client, name, batchId) : { pairs: 0, windows: 0 };
  const feed = pipeline.feed.enabled;
  const merge = () => mergeWindows(client, name, batchId, b.finalUpToUs, feed);
  const numRowsUpdated = b.guarded
    ? await mergeGuarded(client, { lastSeq: checkpoint.lastSeq, batchId }, merge)
    : await merge().catch((e: unknown) => {
        throw isDataException(e) ? new UnguardedMergeFailed("the MERGE failed with a data exception", { cause: e }) : e;
      });
  // Amended events (admission.dedupe: latest): the windows of versions this batch's rows superseded lose them.
  if (read.supersedes) await correctSupersededWindows(client, name, windowSpecOf(pipeline), read.range, batchId, feed);
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
  inputs: InputProgress[];
}

/**
 * The batch's progress (Spark's StreamingQueryProgress); rates from `started` (performance.now())
 * and the previous batch's ISO `timestamp`. `durationMs` runs up to the batch's last statement;
 * `numRowsFinalized` and `numRowsTotal` are 0 here: that statement returns them (closeBatch).
 */
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
    numRowsFinalized: 0,
    numRowsTotal: 0,
    inputs: b.inputs,
  };
}
