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
 * `straggler.window_failures` (src/db/sql/stream/recordWindowFailure.ts), and runs
 * the statement again.
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
async function attempt<T>(
  c: PoolClient,
  subset: T[],
  trial: (subset: T[]) => Promise<unknown>,
): Promise<DatabaseError | undefined> {
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
export async function isolateFailing<T>(
  c: PoolClient,
  items: T[],
  error: DatabaseError,
  trial: (subset: T[]) => Promise<unknown>,
): Promise<Failing<T>[]> {
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
