/**
 * Reconcile: compares every final window (in a range, or all) with a fresh
 * recompute from bronze — the batch oracle — and checks the ledger.
 *
 * The oracle reads the accepted bronze rows the stream has consumed (up to
 * its checkpoint offset) and builds every window whose end is <= the
 * watermark, i.e. every window that must be final. A mismatch is a window
 * whose stored value differs, that is missing, or that should not exist.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { windowSpecOf } from "../config/pipelines.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import { windowsLateral } from "../db/sql/fragments/windowAssignment.js";
import { analyzeIfStale } from "../db/statistics.js";
import type { Aggregate } from "./correct.js";
import { keyIn, keyOut } from "../core/keys.js";
import { isDataException, isolateFailing } from "../db/windowFailures.js";

export interface Mismatch {
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
export interface FailedWindow {
  groupKey: string | null;
  windowStart: string;
  windowEnd: string;
  sqlstate: string;
  error: string;
}

/** A window by stored key and start (ISO). */
interface WindowId {
  k: string;
  s: string;
}

const agg = (n: number | null, s: string | null, lo: string | null, hi: string | null): Aggregate | null =>
  n === null ? null : { count: n, sum: s, min: lo, max: hi };

/** Reconciles `p` over `range` (ISO instants, `[from, to)`), or over all time. */
export async function reconcile(pool: Pool, p: PipelineConfig, range?: { from: string; to: string }): Promise<ReconcileReport> {
  // One snapshot for the checkpoint, the comparison and the ledger: the stream
  // and the correction commit results and checkpoint together, so a single
  // REPEATABLE READ snapshot is always consistent — and blocks neither writer.
  await analyzeIfStale(pool, p.name);
  return withTransaction(pool, (client) => reconcileIn(client, p, range), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

async function reconcileIn(pool: PoolClient, p: PipelineConfig, range?: { from: string; to: string }): Promise<ReconcileReport> {
  const cp = (await pool.query("SELECT last_offset, watermark FROM straggler.checkpoints WHERE pipeline = $1", [p.name])).rows[0] as
    | { last_offset: number; watermark: string | null }
    | undefined;
  const snapshot = cp?.last_offset ?? 0;
  const watermark = cp?.watermark ?? null;
  const from = range?.from ?? null, to = range?.to ?? null;
  const sizeMs = windowSpecOf(p).sizeMs;
  // $7/$8: only these (key, window start)s (a trial of the failure path); $9/$10: all but these (windows that fail).
  const compare = (only: WindowId[] | null, skip: WindowId[] | null) => pool.query(
    `WITH fresh AS (
       SELECT b.group_key, w.window_start, w.window_end, count(*) AS n, sum(b.value) AS s, min(b.value) AS lo, max(b.value) AS hi
         FROM straggler.bronze_events b ${windowsLateral(windowSpecOf(p), "b")}
        WHERE b.pipeline = $1 AND b.status = 'accepted' AND b.seq + 0 <= $2 -- not an index range (see correct.ts)
          AND ($4::timestamptz IS NULL OR (b.event_time >= $4::timestamptz - $6 * interval '1 millisecond' AND b.event_time < $5))
          AND ($7::text[] IS NULL OR (b.group_key, w.window_start) IN (SELECT * FROM unnest($7::text[], $8::timestamptz[])))
          AND ($9::text[] IS NULL OR (b.group_key, w.window_start) NOT IN (SELECT * FROM unnest($9::text[], $10::timestamptz[])))
        GROUP BY 1, 2, 3
     ), expected AS (
       SELECT * FROM fresh
        WHERE $3::timestamptz IS NOT NULL AND window_end <= $3
          AND ($4::timestamptz IS NULL OR (window_start < $5 AND window_end > $4))
     ), stored AS (
       SELECT group_key, window_start, window_end, event_count AS n, value_sum AS s, value_min AS lo, value_max AS hi
         FROM straggler.window_results_table
        WHERE pipeline = $1 AND is_final AND ($4::timestamptz IS NULL OR (window_start < $5 AND window_end > $4))
     )
     SELECT coalesce(e.group_key, s.group_key) AS group_key, coalesce(e.window_start, s.window_start) AS window_start,
            coalesce(e.window_end, s.window_end) AS window_end,
            s.n AS s_n, s.s AS s_s, s.lo AS s_lo, s.hi AS s_hi, e.n AS e_n, e.s AS e_s, e.lo AS e_lo, e.hi AS e_hi,
            -- numeric equality: 9.3 and 9.30 are the same value
            (s.n, s.s, s.lo, s.hi) IS DISTINCT FROM (e.n, e.s, e.lo, e.hi) AS differs
       FROM expected e FULL JOIN stored s USING (group_key, window_start, window_end)
      WHERE $9::text[] IS NULL OR (group_key, window_start) NOT IN (SELECT * FROM unnest($9::text[], $10::timestamptz[]))`,
    [p.name, snapshot, watermark, from, to, sizeMs, only?.map((w) => w.k) ?? null, only?.map((w) => w.s) ?? null, skip?.map((w) => w.k) ?? null, skip?.map((w) => w.s) ?? null],
  );
  // A window whose recompute fails (a data exception, e.g. late rows whose sum overflows numeric, not yet
  // quarantined by a correction run) is reported as failed; the others are compared.
  const failedWindows: FailedWindow[] = [];
  let rows;
  await pool.query("SAVEPOINT straggler_reconcile");
  try {
    rows = (await compare(null, null)).rows;
  } catch (e) {
    if (!isDataException(e)) throw e;
    await pool.query("ROLLBACK TO SAVEPOINT straggler_reconcile");
    const ids = (
      await pool.query(
        `SELECT DISTINCT b.group_key AS k, w.window_start AS s, w.window_end AS e
           FROM straggler.bronze_events b ${windowsLateral(windowSpecOf(p), "b")}
          WHERE b.pipeline = $1 AND b.status = 'accepted' AND b.seq + 0 <= $2
            AND ($3::timestamptz IS NULL OR (b.event_time >= $3::timestamptz - $5 * interval '1 millisecond' AND b.event_time < $4))
          ORDER BY 1, 2`,
        [p.name, snapshot, from, to, sizeMs],
      )
    ).rows as Array<WindowId & { e: string }>;
    const failing = await isolateFailing(pool, ids, e, (subset) => compare(subset, null));
    if (failing.length === 0) throw e;
    for (const f of failing) failedWindows.push({ groupKey: keyOut(f.item.k), windowStart: f.item.s, windowEnd: f.item.e, sqlstate: f.sqlstate, error: f.error });
    rows = (await compare(null, failing.map((f) => f.item))).rows;
  }
  const mismatches: Mismatch[] = rows
    .filter((r) => r.differs)
    .map((r) => ({
      groupKey: keyOut(r.group_key),
      windowStart: r.window_start,
      windowEnd: r.window_end,
      stored: agg(r.s_n, r.s_s, r.s_lo, r.s_hi),
      expected: agg(r.e_n, r.e_s, r.e_lo, r.e_hi),
    }))
    .sort((a, b) => (a.windowStart + keyIn(a.groupKey)).localeCompare(b.windowStart + keyIn(b.groupKey)));
  const l = (
    await pool.query(
      `SELECT (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1) AS landed,
              (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'accepted') AS accepted,
              (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'quarantined') AS quarantined,
              (SELECT coalesce(sum(rows), 0)::int FROM straggler.landed_sources WHERE pipeline = $1) AS by_source,
              (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2) AS backlog`,
      [p.name, snapshot],
    )
  ).rows[0];
  const balanced = l.accepted + l.quarantined === l.landed && l.by_source === l.landed;
  return {
    pipeline: p.name,
    range: range ?? null,
    watermark,
    bronzeSnapshot: snapshot,
    windowsChecked: rows.length,
    mismatches,
    failedWindows,
    ledger: { landed: l.landed, accepted: l.accepted, quarantined: l.quarantined, landedBySource: l.by_source, balanced },
    backlogRows: l.backlog,
    ok: mismatches.length === 0 && failedWindows.length === 0 && balanced,
  };
}
