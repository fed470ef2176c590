/**
 * Reconcile: compares every final window (in a range, or all) with a fresh
 * recompute from bronze — the batch oracle — and checks the ledger.
 *
 * The oracle reads the accepted bronze rows the stream has consumed (up to
 * the last `seq` of its checkpoint) and builds every window whose end is <= the
 * watermark, i.e. every window that must be final. A mismatch is a window
 * whose stored value differs, that is missing, or that should not exist.
 * Session windows are compared with the batch sessionization of the same
 * rows (src/db/sql/lifecycle/compareFinalSessions.ts).
 */
import { guardTimeZone, refuseArchived } from "../guards/index.js";
import { sessionGapOf, windowSpecOf } from "../core/pipelineSpec.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { longestWindowMs } from "../core/windows.js";
import { keyIn, keyOut } from "../core/keys.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import { trySavepoint } from "../db/savepoint.js";
import { compareFinalSessions } from "../db/sql/lifecycle/compareFinalSessions.js";
import {
  compareFinalWindows,
  type ComparedWindow,
  type CompareRequest,
} from "../db/sql/lifecycle/compareFinalWindows.js";
import { readCheckpoint } from "../db/sql/stream/readCheckpoint.js";
import { listBronzeWindows } from "../db/sql/lifecycle/listBronzeWindows.js";
import { readLedger } from "../db/sql/correction/readLedger.js";
import { analyzeIfStale } from "../db/statistics.js";
import { isolateFailing } from "../db/windowFailures.js";
import type { Aggregate } from "./correct.js";

interface Mismatch {
  /** null for the null group. */
  groupKey: string | null;
  windowStart: string;
  windowEnd: string;
  stored: Aggregate | null;
  expected: Aggregate | null;
}

export interface ReconcileReport {
  pipeline: string;
  range: { from: string; to: string } | null;
  watermark: string | null;
  bronzeSnapshot: number;
  windowsChecked: number;
  mismatches: Mismatch[];
  /** Windows whose recompute from bronze fails (a data exception): not compared; a correction run quarantines their late rows. */
  failedWindows: FailedWindow[];
  ledger: { landed: number; accepted: number; quarantined: number; landedBySource: number; balanced: boolean };
  /** Rows in bronze the stream has not read yet (not part of the comparison). */
  backlogRows: number;
  ok: boolean;
}

/** A window reconcile could not recompute. */
interface FailedWindow {
  groupKey: string | null;
  windowStart: string;
  windowEnd: string;
  sqlstate: string;
  error: string;
}

/**
 * Reconciles `pipeline` over `range` (ISO instants, `[from, to)`), or over all time.
 * @throws TimeZoneRefusedError (src/guards/timeZone.ts) when the calendar window's zone is one PostgreSQL
 *   does not know; the database's error (a data exception only when no single window's recompute fails alone)
 * @throws HorizonRefusedError (src/guards/horizon.ts) when the range (or, without one, all time) reaches
 *   windows archived rows could be in: they would compare as mismatches against what is left in bronze
 */
export async function reconcile(
  pool: Pool,
  pipeline: PipelineConfig,
  range?: { from: string; to: string },
): Promise<ReconcileReport> {
  await guardTimeZone(pool, pipeline);
  await refuseArchived(
    pool,
    pipeline,
    "reconcile of the final windows",
    range ?? null,
    sessionGapOf(pipeline) ?? longestWindowMs(windowSpecOf(pipeline)),
  );
  // One snapshot for the checkpoint, the comparison and the ledger: the stream
  // and the correction commit results and checkpoint together, so a single
  // REPEATABLE READ snapshot is always consistent — and blocks neither writer.
  await analyzeIfStale(pool, pipeline.name);
  return withTransaction(
    pool,
    (client) => reconcileIn(client, pipeline, range),
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
  );
}

async function reconcileIn(
  client: PoolClient,
  pipeline: PipelineConfig,
  range?: { from: string; to: string },
): Promise<ReconcileReport> {
  const checkpoint = await readCheckpoint(client, pipeline.name);
  const req: CompareRequest = {
    snapshot: checkpoint?.lastSeq ?? 0,
    watermark: checkpoint?.watermark ?? null,
    range: range ?? null,
  };
  const { compared, failedWindows } = await compareIsolatingFailures(client, pipeline, req);
  const mismatches: Mismatch[] = compared
    .filter((w) => w.differs)
    .map((w) => ({
      groupKey: keyOut(w.groupKey),
      windowStart: w.windowStart,
      windowEnd: w.windowEnd,
      stored: w.stored,
      expected: w.expected,
    }))
    // By start and key, then end: two session windows of one key may start together (a stored one and the one bronze says).
    .sort(
      (a, b) =>
        (a.windowStart + keyIn(a.groupKey)).localeCompare(b.windowStart + keyIn(b.groupKey)) ||
        a.windowEnd.localeCompare(b.windowEnd),
    );
  const ledger = await readLedger(client, pipeline.name, req.snapshot);
  const balanced = ledger.accepted + ledger.quarantined === ledger.landed && ledger.landedBySource === ledger.landed;
  return {
    pipeline: pipeline.name,
    range: range ?? null,
    watermark: req.watermark,
    bronzeSnapshot: req.snapshot,
    windowsChecked: compared.length,
    mismatches,
    failedWindows,
    ledger: {
      landed: ledger.landed,
      accepted: ledger.accepted,
      quarantined: ledger.quarantined,
      landedBySource: ledger.landedBySource,
      balanced,
    },
    backlogRows: ledger.backlog,
    ok: mismatches.length === 0 && failedWindows.length === 0 && balanced,
  };
}

/**
 * Compares every window; a window whose recompute fails (a data exception, e.g. late rows whose sum
 * overflows numeric, not yet quarantined by a correction run) is found by bisection and reported as
 * failed, and the others are compared without it.
 */
async function compareIsolatingFailures(
  client: PoolClient,
  pipeline: PipelineConfig,
  req: CompareRequest,
): Promise<{ compared: ComparedWindow[]; failedWindows: FailedWindow[] }> {
  const gapMs = sessionGapOf(pipeline);
  if (gapMs !== undefined)
    return { compared: await compareFinalSessions(client, pipeline, gapMs, req), failedWindows: [] };
  const whole = await trySavepoint(client, "straggler_reconcile", () => compareFinalWindows(client, pipeline, req));
  if (whole.error === undefined) return { compared: whole.value, failedWindows: [] };
  const windows = await listBronzeWindows(client, pipeline, req.snapshot, req.range);
  const failing = await isolateFailing(client, windows, whole.error, (only) =>
    compareFinalWindows(client, pipeline, { ...req, only }),
  );
  if (failing.length === 0) throw whole.error;
  const failedWindows = failing.map((f) => ({
    groupKey: keyOut(f.item.groupKey),
    windowStart: f.item.windowStart,
    windowEnd: f.item.windowEnd,
    sqlstate: f.sqlstate,
    error: f.error,
  }));
  return {
    compared: await compareFinalWindows(client, pipeline, { ...req, skip: failing.map((f) => f.item) }),
    failedWindows,
  };
}
