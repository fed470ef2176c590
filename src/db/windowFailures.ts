/**
 * Windows whose aggregate fails with a data exception (SQLSTATE class 22:
 * a sum overflowing numeric, a division by zero, …). Without isolation one
 * such window fails every statement that aggregates it — every later
 * micro-batch, every correction run — and so stops the whole pipeline.
 *
 * The failure path only: a statement over many windows that fails with a data
 * exception is tried again on halves of its windows, each trial under a
 * SAVEPOINT and rolled back, down to the single windows that fail (bisection:
 * about 2·f·log2(n) trials for f failing windows among n). The caller then
 * quarantines the rows that cause them (status `quarantined`, reason
 * `INVALID_VALUE`, a detail naming the window and the error — accepted +
 * quarantined = landed still holds), records each window in
 * `straggler.window_failures`, and runs the statement again.
 */
import type { DatabaseError } from "pg";
import { isDataException } from "./errors.js";
import type { PoolClient } from "./pool.js";

/** One window that failed on its own, with the error it raised. */
export interface Failing<T> {
  item: T;
  sqlstate: string;
  error: string;
}

/**
 * Runs `trial(subset)` under a savepoint and rolls it back whatever happens.
 * @returns the data exception it raised, or undefined when it succeeded
 * @throws any other error
 */
async function attempt<T>(c: PoolClient, subset: T[], trial: (subset: T[]) => Promise<unknown>): Promise<DatabaseError | undefined> {
  await c.query("SAVEPOINT straggler_trial");
  try {
    await trial(subset);
    return undefined;
  } catch (e) {
    if (!isDataException(e)) throw e;
    return e;
  } finally {
    await c.query("ROLLBACK TO SAVEPOINT straggler_trial");
    await c.query("RELEASE SAVEPOINT straggler_trial");
  }
}

/**
 * Finds the items (windows) for which `trial` fails on its own, by bisection.
 * `trial(subset)` must run the failing statement restricted to `subset`; each
 * run is rolled back. `error` is the data exception the whole set raised.
 * @returns the failing items with their SQLSTATE and message; empty when no single item fails alone
 */
export async function isolateFailing<T>(c: PoolClient, items: T[], error: DatabaseError, trial: (subset: T[]) => Promise<unknown>): Promise<Failing<T>[]> {
  if (items.length === 0) return [];
  if (items.length === 1) return [{ item: items[0]!, sqlstate: error.code ?? "22000", error: error.message }];
  const half = items.length >> 1;
  const out: Failing<T>[] = [];
  for (const part of [items.slice(0, half), items.slice(half)]) {
    const e = await attempt(c, part, trial);
    if (e !== undefined) out.push(...(await isolateFailing(c, part, e, trial)));
  }
  return out;
}

/** A failing window as recorded: stored group key, bounds (ISO), the error, and the bronze rows quarantined for it. */
export interface WindowFailure {
  groupKey: string;
  windowStart: string;
  windowEnd: string;
  sqlstate: string;
  error: string;
  seqs: number[];
}

/** The detail written on each row quarantined for a failing window. */
export function failureDetail(f: WindowFailure, phase: "stream" | "correction"): string {
  return `the ${phase === "stream" ? "micro-batch" : "correction"} could not aggregate window [${f.windowStart}, ${f.windowEnd}) of this key: ${f.error} (SQLSTATE ${f.sqlstate}); its rows of the ${phase === "stream" ? "batch" : "late events"} are quarantined`;
}

/**
 * Quarantines the still-accepted rows `f.seqs` of pipeline `pipeline` and records the window in `window_failures`.
 * @returns the number of rows quarantined
 */
export async function recordWindowFailure(
  c: PoolClient,
  pipeline: string,
  f: WindowFailure,
  at: { phase: "stream"; batchId: number } | { phase: "correction"; runId: number },
): Promise<number> {
  const q = await c.query(
    `UPDATE straggler.bronze_events SET status = 'quarantined', reason = 'INVALID_VALUE', detail = $3
      WHERE pipeline = $1 AND seq = ANY($2::bigint[]) AND status = 'accepted'`,
    [pipeline, f.seqs, failureDetail(f, at.phase)],
  );
  const n = q.rowCount ?? 0;
  await c.query(
    `INSERT INTO straggler.window_failures (pipeline, group_key, window_start, window_end, phase, batch_id, run_id, sqlstate, error, quarantined_rows)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [pipeline, f.groupKey, f.windowStart, f.windowEnd, at.phase, at.phase === "stream" ? at.batchId : null, at.phase === "correction" ? at.runId : null, f.sqlstate, f.error, n],
  );
  return n;
}
