/**
 * The correction job (DESIGN §9–10): recomputes windows the stream had to
 * leave wrong — every window awaiting correction, and on request every final
 * window overlapping a time range (optionally only some group keys) — as a
 * full replacement from accepted bronze rows, never a delta.
 *
 * One transaction per run, under the pipeline's results lock (the stream's
 * batches and correction runs never write at the same time). The steps, each
 * one operation of the query layer (src/db/sql/):
 *
 *   refuseEarly (a configured policy that is not the live results' one is
 *   refused before the run is claimed: PolicyRefusedError, no run recorded) →
 *   lockResults → guardPolicy (again, under the lock) → readCheckpoint: the bronze snapshot is the stream's last
 *   committed `seq`, the windows it no longer owns end at or before its
 *   watermark → collectTargets → recomputeTargets (from bronze rows up to the
 *   snapshot, keeping the windows whose value changed; a window whose
 *   aggregate fails is isolated: isolateTargets.ts) → mergeCorrections (final,
 *   corrected, revision + 1) → writeAudit (before/after with the late events
 *   that caused it) → clearLateMarks (only up to the snapshot) → finishRun.
 *
 * Session windows take their own steps (src/correction/sessions.ts) in the same run.
 *
 * Rows that land during a run are beyond its snapshot: the stream registers
 * them and the next run corrects them. Running twice changes nothing the
 * second time.
 */
import { sessionGapOf, windowSpecOf } from "../core/pipelineSpec.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { keyIn } from "../core/keys.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import { withRetry } from "../db/retry.js";
import { clearLateMarks } from "../db/sql/stream/clearLateMarks.js";
import { collectTargets } from "../db/sql/correction/collectTargets.js";
import { readCheckpoint } from "../db/sql/stream/readCheckpoint.js";
import { createRunTables } from "../db/sql/lifecycle/createRunTables.js";
import { lockResults } from "../db/sql/stream/lockResults.js";
import { notifyChanges } from "../db/sql/feed/notifyChanges.js";
import { mergeCorrections } from "../db/sql/correction/mergeCorrections.js";
import { writeAudit, type WindowChange } from "../db/sql/correction/writeAudit.js";
import { addMismatchTargets, settleMismatches } from "../db/sql/reconcile/mismatches.js";
import { withReconcileCauses } from "./reconcileCauses.js";
import { analyzeIfStale } from "../db/statistics.js";
import { dropArchivedTargets, guardPolicy, type PolicyAdoption, refuseArchived, refuseEarly } from "../guards/index.js";
import { longestWindowMs } from "../core/windows.js";
import { recomputeGuarded, type RunSnapshot } from "./isolateTargets.js";
import { correctSessions } from "./sessions.js";
import { finishRun, holdRun, recordFailure, type SlotHolder } from "./runLease.js";

export type { Aggregate } from "../db/sql/readmodel/windows.js";

type CorrectionTrigger = "cron" | "api" | "cli";

export interface CorrectionRequest {
  trigger: CorrectionTrigger;
  /** Recompute every final window overlapping `[from, to)` (ISO instants) too. */
  range?: { from: string; to: string };
  /** Only these group keys, as clients name them (null = the null group). */
  keys?: (string | null)[];
  /** Scheduled minute of a cron run (ISO): a slot runs once across replicas; a failed or abandoned slot can run again. */
  cronSlot?: string;
}

export interface CorrectionSummary {
  runId: number | null;
  pipeline: string;
  trigger: CorrectionTrigger;
  /** `skipped`: the cron slot is held by a run that succeeded or is running (another replica's, or an earlier try's). */
  status: "succeeded" | "failed" | "skipped";
  /** For `skipped`: the run holding the slot. */
  heldBy?: SlotHolder;
  range: { from: string; to: string } | null;
  keys: (string | null)[] | null;
  bronzeSnapshot: number | null;
  windowsExamined: number;
  windowsChanged: number;
  /** Windows whose recompute failed (a data exception): recorded in `straggler.failed_windows`, their late rows quarantined. */
  windowsFailed: number;
  /**
   * Windows awaiting correction that archived rows could be in (src/guards/horizon.ts): not
   * recomputed, left awaiting correction with their late events. Present only when some were.
   */
  windowsPastHorizon?: number;
  eventsRecovered: number;
  durationMs: number;
  error: string | null;
  changes: WindowChange[];
}

/** Seams of a run's lease, for tests and tools; production takes the pipeline's `correction.lease`. */
export interface CorrectionOptions {
  /** Lease length, ms (default: the pipeline's `correction.lease`, 60 s unless configured). */
  leaseMs?: number;
  /** How often the lease is renewed, ms (default: a third of the lease). */
  heartbeatMs?: number;
  /** Called once the run has committed, when its policy guard adopted the configured policy (src/guards/policy.ts). */
  onPolicyAdopted?: (adoption: PolicyAdoption) => void;
}

/**
 * Raised when a run failed and its outcome could not be recorded either (the
 * database is away). Carries the database error's `code`. The run's row stays
 * `running` until its lease expires and it is abandoned.
 */
class RunNotRecordedError extends Error {
  override name = "RunNotRecordedError";
  readonly code: string | undefined;
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.code = (cause as { code?: string }).code;
  }
}

/**
 * Runs one correction of `pipeline`: claims the run under a lease and a holder lock on a
 * connection of its own (src/correction/runLease.ts), renews the lease while working, and commits its changes together with status `succeeded`.
 * @returns the run's summary: `skipped` (with `heldBy`) when `req.cronSlot` is held by a run that
 *   succeeded or is running; a failure is recorded and returned with `status: "failed"`, never thrown
 * @throws HorizonRefusedError (src/guards/horizon.ts) when `req.range` reaches windows archived rows could be in
 *   (past the correction horizon): nothing is recomputed and no run is recorded
 * @throws PolicyRefusedError (src/guards/policy.ts) when the configured policy is refused
 *   (it differs from the live results' policy): a known state, not a failure, so no run is
 *   claimed or recorded (README "Policy versions"); the database's error when the run cannot be
 *   claimed (database unreachable), and RunNotRecordedError when it failed and the failure cannot be recorded
 */
export async function runCorrection(
  pool: Pool,
  pipeline: PipelineConfig,
  req: CorrectionRequest,
  opts: CorrectionOptions = {},
): Promise<CorrectionSummary> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const base = summaryOf(pipeline, req);
  // A refused policy is a known state, not a failed run: checked before claiming, without the
  // results lock (a running batch must not delay the claim); the run's own transaction checks again.
  await refuseEarly(pool, pipeline);
  // A range reaching archived rows is refused whole: its windows would be recomputed from what is left of them.
  if (req.range)
    await refuseArchived(pool, pipeline, "correction of the windows in", req.range, rangeMarginMs(pipeline));
  const leaseMs = opts.leaseMs ?? pipeline.correction.lease;
  const claim = await holdRun(
    pool,
    {
      pipeline: pipeline.name,
      trigger: req.trigger,
      cronSlot: req.cronSlot ?? null,
      range: req.range ?? null,
      keys: req.keys ?? null,
      leaseMs,
    },
    opts.heartbeatMs,
  );
  if (claim.heldBy) return { ...base, status: "skipped", heldBy: claim.heldBy, durationMs: elapsed() };
  const running = { ...base, runId: claim.hold.runId };
  try {
    await analyzeIfStale(pool, pipeline.name);
    let adopted: PolicyAdoption | undefined;
    const summary = await withRetry(() =>
      withTransaction(pool, (client) =>
        correctUnderLock(client, pipeline, req, running, elapsed, (a) => (adopted = a)),
      ),
    );
    if (adopted) opts.onPolicyAdopted?.(adopted);
    return summary;
  } catch (e) {
    return await recordFailedRun(pool, running, (e as Error).message, leaseMs, elapsed);
  } finally {
    await claim.hold.stop(); // after the run's transaction has ended: the holder lock outlives its commit
  }
}

/** How long before a range's start a window overlapping it may start, ms: the longest window, or the session gap. */
function rangeMarginMs(pipeline: PipelineConfig): number {
  return sessionGapOf(pipeline) ?? longestWindowMs(windowSpecOf(pipeline));
}

/** A summary with nothing done yet. */
function summaryOf(pipeline: PipelineConfig, req: CorrectionRequest): CorrectionSummary {
  return {
    runId: null,
    pipeline: pipeline.name,
    trigger: req.trigger,
    status: "succeeded",
    range: req.range ?? null,
    keys: req.keys ?? null,
    bronzeSnapshot: null,
    windowsExamined: 0,
    windowsChanged: 0,
    windowsFailed: 0,
    eventsRecovered: 0,
    durationMs: 0,
    error: null,
    changes: [],
  };
}

/**
 * The run's transaction: under the pipeline's results lock, reads the stream's checkpoint — the
 * bronze snapshot is its committed `seq`, the windows it no longer owns end at or before its
 * watermark — corrects them, and records `succeeded` with the changes (or throws LeaseLostError).
 */
async function correctUnderLock(
  client: PoolClient,
  pipeline: PipelineConfig,
  req: CorrectionRequest,
  running: CorrectionSummary,
  elapsed: () => number,
  adopt: (a: PolicyAdoption | undefined) => void,
): Promise<CorrectionSummary> {
  await lockResults(client, pipeline.name);
  adopt((await guardPolicy(client, pipeline)).adopted); // a window spec or admission the results were not computed under must not rewrite them
  const checkpoint = await readCheckpoint(client, pipeline.name);
  let summary: CorrectionSummary = { ...running, bronzeSnapshot: checkpoint?.lastSeq ?? null };
  if (checkpoint && checkpoint.watermark !== null) {
    const run = { runId: running.runId!, snapshot: checkpoint.lastSeq, watermark: checkpoint.watermark };
    summary = { ...summary, ...(await correctWindows(client, pipeline, req, run)) };
  }
  if (pipeline.feed.enabled && summary.windowsChanged > 0) await notifyChanges(client, pipeline.name); // the run's changes are in the feed (docs/change-feed.md)
  summary.durationMs = elapsed();
  await finishRun(client, running.runId!, summary); // commits with the changes, or throws when the lease was lost
  return summary;
}

/**
 * DESIGN §9 in order: collect the target windows → recompute each from bronze rows up to the
 * snapshot, keeping those whose value changed (isolating windows whose aggregate fails) → upsert
 * them final, corrected, revision + 1 → audit before/after with the late events that caused it
 * → clear the "awaiting correction" marks only up to the snapshot.
 */
async function correctWindows(client: PoolClient, pipeline: PipelineConfig, req: CorrectionRequest, run: RunSnapshot) {
  const keys = req.keys && req.keys.length > 0 ? req.keys.map(keyIn) : null;
  const gapMs = sessionGapOf(pipeline);
  if (gapMs !== undefined) return correctSessions(client, pipeline, gapMs, run, { range: req.range ?? null, keys });
  await createRunTables(client);
  const collected =
    (await collectTargets(client, pipeline, {
      snapshot: run.snapshot,
      watermark: run.watermark,
      range: req.range ?? null,
      keys,
    })) +
    (await addMismatchTargets(client, pipeline.name, { watermark: run.watermark, range: req.range ?? null, keys })); // found by reconcile runs
  // Windows archived rows could be in stay awaiting correction: their rows are no longer all in bronze.
  const windowsPastHorizon = await dropArchivedTargets(client, pipeline.name);
  const windowsExamined = collected - windowsPastHorizon;
  const windowsFailed = await recomputeGuarded(client, pipeline, run);
  await mergeCorrections(client, pipeline.name, pipeline.feed.enabled ? run.runId : null);
  const changes = withReconcileCauses(
    await writeAudit(client, pipeline.name, run.runId, run.snapshot),
    await settleMismatches(client, pipeline.name, run.runId),
  );
  await clearLateMarks(client, pipeline.name, run.snapshot);
  const eventsRecovered = changes.reduce((n, change) => n + change.lateEventCount, 0);
  return {
    windowsExamined,
    windowsChanged: changes.length,
    windowsFailed,
    eventsRecovered,
    changes,
    ...(windowsPastHorizon > 0 ? { windowsPastHorizon } : {}),
  };
}

/**
 * Records a run whose transaction failed. When its row shows `succeeded`, the COMMIT went through
 * although its answer was lost: the run's changes are in, their list is not at hand.
 * @throws RunNotRecordedError when the failure cannot be recorded
 */
async function recordFailedRun(
  pool: Pool,
  running: CorrectionSummary,
  error: string,
  leaseMs: number,
  elapsed: () => number,
): Promise<CorrectionSummary> {
  const runId = running.runId!;
  let row: Awaited<ReturnType<typeof recordFailure>>;
  try {
    row = await recordFailure(pool, runId, error, elapsed());
  } catch (e2) {
    throw new RunNotRecordedError(
      `correction run ${runId} of ${running.pipeline} failed (${error}) and its outcome could not be recorded (${(e2 as Error).message}); ` +
        `it stays 'running' until its lease expires (within ${leaseMs / 1000} s) or its holder's session ends, and is then marked abandoned: straggler.correction_history tells its outcome`,
      e2,
    );
  }
  if (row.status === "succeeded") {
    return {
      ...running,
      status: "succeeded",
      bronzeSnapshot: row.bronzeSnapshot ?? null,
      windowsExamined: row.windowsExamined ?? 0,
      windowsChanged: row.windowsChanged ?? 0,
      eventsRecovered: row.eventsRecovered ?? 0,
      durationMs: row.durationMs ?? elapsed(),
    };
  }
  return { ...running, status: "failed", error, durationMs: elapsed() };
}
