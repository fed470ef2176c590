/**
 * The correction job (DESIGN §9–10): recomputes windows the stream had to
 * leave wrong — every window awaiting correction, and on request every final
 * window overlapping a time range (optionally only some group keys) — as a
 * full replacement from accepted bronze rows, never a delta.
 *
 * One transaction per run, under the pipeline's results lock (the stream's
 * batches and correction runs never write at the same time):
 *
 *   read the checkpoint: the bronze snapshot is the stream's committed offset,
 *   the windows it no longer owns are those with end <= its watermark
 *   → collect target windows → recompute each from bronze rows <= snapshot
 *   → keep the ones whose value changed → upsert them (final, corrected,
 *     revision + 1) → audit before/after with the late events that caused it
 *   → clear "awaiting correction" marks only up to the snapshot.
 *
 * Rows that land during a run are beyond its snapshot: the stream registers
 * them and the next run corrects them. Running twice changes nothing the
 * second time.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { windowSpecOf } from "../config/pipelines.js";
import { LockNamespace, XACT_LOCK_SQL } from "../db/locks.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import { withRetry } from "../db/retry.js";
import { analyzeIfStale } from "../db/statistics.js";
import { windowsLateral } from "../db/sql/fragments/windowAssignment.js";
import { claimRun, finishRun, recordFailure, startHeartbeat, type SlotHolder } from "./runLease.js";
import { keyIn, keyOut } from "../core/keys.js";
import { recomputeGuarded } from "./isolateTargets.js";

export type CorrectionTrigger = "cron" | "api" | "cli";

export interface CorrectionRequest {
  trigger: CorrectionTrigger;
  /** Recompute every final window overlapping `[from, to)` (ISO instants) too. */
  range?: { from: string; to: string };
  /** Only these group keys, as clients name them (null = the null group). */
  keys?: (string | null)[];
  /** Scheduled minute of a cron run (ISO): a slot runs once across replicas; a failed or abandoned slot can run again. */
  cronSlot?: string;
}

export interface Aggregate {
  count: number;
  sum: string | null;
  min: string | null;
  max: string | null;
}

export interface WindowChange {
  /** null for the null group. */
  groupKey: string | null;
  windowStart: string;
  windowEnd: string;
  before: Aggregate | null;
  after: Aggregate;
  revision: number;
  lateEventCount: number;
  lateEventIds: string[];
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
  eventsRecovered: number;
  durationMs: number;
  error: string | null;
  changes: WindowChange[];
}

/*
 * `b.seq + 0 <= snapshot`: the snapshot bound must not be usable as an index
 * range on the sequence key — without fresh statistics the planner takes it
 * and scans a pipeline's whole history once per window. The (pipeline, group
 * key, event time) index is the access path a correction's cost should follow.
 */

/** At most this many late event ids are kept per audit row (the count is always exact). */
const MAX_IDS_PER_WINDOW = 1000;

async function collectTargets(c: PoolClient, p: PipelineConfig, req: CorrectionRequest, snapshot: number, watermark: string): Promise<number> {
  await c.query(`CREATE TEMP TABLE IF NOT EXISTS corr_targets (group_key text, window_start timestamptz, window_end timestamptz,
                  PRIMARY KEY (group_key, window_start, window_end)) ON COMMIT DELETE ROWS`);
  const keys = req.keys && req.keys.length > 0 ? req.keys.map(keyIn) : null;
  const from = req.range?.from ?? null, to = req.range?.to ?? null;
  // Windows awaiting correction (in the range, when one is given).
  await c.query(
    `INSERT INTO corr_targets
     SELECT group_key, window_start, window_end FROM straggler.late_windows
      WHERE pipeline = $1 AND window_end <= $2
        AND ($3::timestamptz IS NULL OR (window_start < $4 AND window_end > $3))
        AND ($5::text[] IS NULL OR group_key = ANY($5))
     ON CONFLICT DO NOTHING`,
    [p.name, watermark, from, to, keys],
  );
  if (req.range) {
    // Every final window in the range: those stored, and those bronze says should exist.
    await c.query(
      `INSERT INTO corr_targets
       SELECT group_key, window_start, window_end FROM straggler.window_results_table
        WHERE pipeline = $1 AND window_end <= $2 AND window_start < $4 AND window_end > $3
          AND ($5::text[] IS NULL OR group_key = ANY($5))
       ON CONFLICT DO NOTHING`,
      [p.name, watermark, from, to, keys],
    );
    const sizeMs = windowSpecOf(p).sizeMs;
    await c.query(
      `INSERT INTO corr_targets
       SELECT DISTINCT b.group_key, w.window_start, w.window_end
         FROM straggler.bronze_events b ${windowsLateral(windowSpecOf(p), "b")}
        WHERE b.pipeline = $1 AND b.status = 'accepted' AND b.seq + 0 <= $6
          AND b.event_time >= $3::timestamptz - $7 * interval '1 millisecond' AND b.event_time < $4
          AND w.window_end <= $2 AND w.window_start < $4 AND w.window_end > $3
          AND ($5::text[] IS NULL OR b.group_key = ANY($5))
       ON CONFLICT DO NOTHING`,
      [p.name, watermark, from, to, keys, snapshot, sizeMs],
    );
  }
  return (await c.query("SELECT count(*)::int AS n FROM corr_targets")).rows[0].n;
}

/** Recomputes the targets, applies the changed ones, writes the audit, clears marks. Returns the changes. */
async function applyCorrections(c: PoolClient, p: PipelineConfig, runId: number, snapshot: number): Promise<WindowChange[]> {
  await c.query(`CREATE TEMP TABLE IF NOT EXISTS corr_changes (group_key text, window_start timestamptz, window_end timestamptz,
                  rev_before int, n_before bigint, s_before numeric, lo_before numeric, hi_before numeric,
                  n bigint, s numeric, lo numeric, hi numeric) ON COMMIT DELETE ROWS`);
  // Full replacement from accepted bronze rows up to the snapshot; only values that differ.
  // A window whose recompute fails (a data exception) is isolated, never stops the run.
  await recomputeGuarded(c, p, runId, snapshot, () => c.query(
    `INSERT INTO corr_changes
     SELECT t.group_key, t.window_start, t.window_end, r.revision, r.event_count, r.value_sum, r.value_min, r.value_max, f.n, f.s, f.lo, f.hi
       FROM corr_targets t
       CROSS JOIN LATERAL (
         SELECT count(*) AS n, sum(b.value) AS s, min(b.value) AS lo, max(b.value) AS hi
           FROM straggler.bronze_events b
          WHERE b.pipeline = $1 AND b.group_key = t.group_key AND b.status = 'accepted' AND b.seq + 0 <= $2
            AND b.event_time >= t.window_start AND b.event_time < t.window_end) f
       LEFT JOIN straggler.window_results_table r
         ON r.pipeline = $1 AND r.group_key = t.group_key AND r.window_start = t.window_start AND r.window_end = t.window_end
      WHERE (r.pipeline IS NULL AND f.n > 0)
         OR (r.pipeline IS NOT NULL AND (r.event_count, r.value_sum, r.value_min, r.value_max) IS DISTINCT FROM (f.n, f.s, f.lo, f.hi))`,
    [p.name, snapshot],
  ));
  await c.query(
    `INSERT INTO straggler.window_results_table AS r
       (pipeline, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final, corrected, revision)
     SELECT $1, group_key, window_start, window_end, n, s, lo, hi, true, true, 1 FROM corr_changes
     ON CONFLICT (pipeline, group_key, window_start, window_end) DO UPDATE
       SET event_count = excluded.event_count, value_sum = excluded.value_sum, value_min = excluded.value_min,
           value_max = excluded.value_max, is_final = true, corrected = true, revision = r.revision + 1, updated_at = now()`,
    [p.name],
  );
  const { rows } = await c.query(
    `INSERT INTO straggler.corrections (run_id, pipeline, group_key, window_start, window_end, revision_before, revision_after,
        count_before, sum_before, min_before, max_before, count_after, sum_after, min_after, max_after, late_event_count, late_event_ids)
     SELECT $2, $1, ch.group_key, ch.window_start, ch.window_end, ch.rev_before, coalesce(ch.rev_before + 1, 1),
            ch.n_before, ch.s_before, ch.lo_before, ch.hi_before, ch.n, ch.s, ch.lo, ch.hi,
            coalesce(le.n, 0), coalesce(le.ids, '{}')
       FROM corr_changes ch
       LEFT JOIN LATERAL (
         SELECT count(*)::int AS n, (array_agg(b.event_id ORDER BY l.seq))[1:${MAX_IDS_PER_WINDOW}] AS ids
           FROM straggler.late_events l JOIN straggler.bronze_events b ON b.seq = l.seq
          WHERE l.pipeline = $1 AND l.group_key = ch.group_key AND l.window_start = ch.window_start
            AND l.window_end = ch.window_end AND l.seq <= $3) le ON true
     RETURNING group_key, window_start, window_end, revision_after, count_before, sum_before, min_before, max_before,
               count_after, sum_after, min_after, max_after, late_event_count, late_event_ids`,
    [p.name, runId, snapshot],
  );
  // Marks are cleared only up to the snapshot this run read.
  await c.query(
    `DELETE FROM straggler.late_events l USING corr_targets t
      WHERE l.pipeline = $1 AND l.group_key = t.group_key AND l.window_start = t.window_start AND l.window_end = t.window_end AND l.seq <= $2`,
    [p.name, snapshot],
  );
  await c.query(
    `DELETE FROM straggler.late_windows l USING corr_targets t
      WHERE l.pipeline = $1 AND l.group_key = t.group_key AND l.window_start = t.window_start AND l.window_end = t.window_end AND l.max_seq <= $2`,
    [p.name, snapshot],
  );
  return rows
    .map((r) => ({
      groupKey: keyOut(r.group_key),
      windowStart: r.window_start,
      windowEnd: r.window_end,
      before: r.count_before === null ? null : { count: r.count_before, sum: r.sum_before, min: r.min_before, max: r.max_before },
      after: { count: r.count_after, sum: r.sum_after, min: r.min_after, max: r.max_after },
      revision: r.revision_after,
      lateEventCount: r.late_event_count,
      lateEventIds: r.late_event_ids,
    }))
    .sort((a, b) => (keyIn(a.groupKey) + a.windowStart).localeCompare(keyIn(b.groupKey) + b.windowStart));
}

/** Seams of a run's lease, for tests and tools; production takes the pipeline's `correction.lease`. */
export interface CorrectionOptions {
  /** Lease length, ms (default: the pipeline's `correction.lease`, 60 s unless configured). */
  leaseMs?: number;
  /** How often the lease is renewed, ms (default: a third of the lease). */
  heartbeatMs?: number;
}

/**
 * Raised when a run failed and its outcome could not be recorded either (the
 * database is away). Carries the database error's `code`. The run's row stays
 * `running` until its lease expires and it is abandoned.
 */
export class RunNotRecordedError extends Error {
  override name = "RunNotRecordedError";
  readonly code: string | undefined;
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.code = (cause as { code?: string }).code;
  }
}

/**
 * Runs one correction of `p`: claims the run under a lease (src/correction/runLease.ts),
 * renews it while working, and commits its changes together with status `succeeded`.
 * @returns the run's summary: `skipped` (with `heldBy`) when `req.cronSlot` is held by a run that
 *   succeeded or is running; a failure is recorded and returned with `status: "failed"`, never thrown
 * @throws the database's error when the run cannot be claimed (database unreachable), and
 *   RunNotRecordedError when it failed and the failure cannot be recorded
 */
export async function runCorrection(pool: Pool, p: PipelineConfig, req: CorrectionRequest, opts: CorrectionOptions = {}): Promise<CorrectionSummary> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const base: CorrectionSummary = {
    runId: null, pipeline: p.name, trigger: req.trigger, status: "succeeded", range: req.range ?? null, keys: req.keys ?? null,
    bronzeSnapshot: null, windowsExamined: 0, windowsChanged: 0, windowsFailed: 0, eventsRecovered: 0, durationMs: 0, error: null, changes: [],
  };
  const leaseMs = opts.leaseMs ?? p.correction.lease;
  const claim = await claimRun(pool, {
    pipeline: p.name, trigger: req.trigger, cronSlot: req.cronSlot ?? null, range: req.range ?? null, keys: req.keys ?? null, leaseMs,
  });
  if (claim.heldBy) return { ...base, status: "skipped", heldBy: claim.heldBy, durationMs: elapsed() };
  const runId = claim.runId;
  const heartbeat = startHeartbeat(pool, runId, leaseMs, opts.heartbeatMs);
  try {
    await analyzeIfStale(pool, p.name);
    return await withRetry(() =>
      withTransaction(pool, async (c) => {
        await c.query(XACT_LOCK_SQL, [LockNamespace.results, p.name]);
        const cp = (await c.query("SELECT last_offset, watermark FROM straggler.checkpoints WHERE pipeline = $1", [p.name])).rows[0] as
          | { last_offset: number; watermark: string | null }
          | undefined;
        let summary: CorrectionSummary = { ...base, runId, bronzeSnapshot: cp?.last_offset ?? null };
        if (cp && cp.watermark !== null) {
          const examined = await collectTargets(c, p, req, cp.last_offset, cp.watermark);
          const changes = await applyCorrections(c, p, runId, cp.last_offset);
          const failed = (await c.query("SELECT count(*)::int AS n FROM straggler.window_failures WHERE run_id = $1", [runId])).rows[0].n as number;
          summary = {
            ...summary, windowsExamined: examined, windowsChanged: changes.length, windowsFailed: failed,
            eventsRecovered: changes.reduce((n, ch) => n + ch.lateEventCount, 0), changes,
          };
        }
        summary.durationMs = elapsed();
        await finishRun(c, runId, summary); // commits with the changes, or throws when the lease was lost
        return summary;
      }),
    );
  } catch (e) {
    const error = (e as Error).message;
    let row: Awaited<ReturnType<typeof recordFailure>>;
    try {
      row = await recordFailure(pool, runId, error, elapsed());
    } catch (e2) {
      throw new RunNotRecordedError(
        `correction run ${runId} of ${p.name} failed (${error}) and its outcome could not be recorded (${(e2 as Error).message}); ` +
          `it stays 'running' until its lease expires (within ${leaseMs / 1000} s) and is then marked abandoned: straggler.correction_history tells its outcome`,
        e2,
      );
    }
    if (row.status === "succeeded") {
      // The COMMIT went through although its answer was lost: the run's changes are in, their list is not at hand.
      return { ...base, runId, status: "succeeded", bronzeSnapshot: row.bronzeSnapshot ?? null, windowsExamined: row.windowsExamined ?? 0,
        windowsChanged: row.windowsChanged ?? 0, eventsRecovered: row.eventsRecovered ?? 0, durationMs: row.durationMs ?? elapsed() };
    }
    return { ...base, runId, status: "failed", error, durationMs: elapsed() };
  } finally {
    await heartbeat.stop();
  }
}
