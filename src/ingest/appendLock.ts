/**
 * A pipeline's bronze-append lock (DESIGN §10: sequence order = commit order),
 * taken so that waiting for it never holds a database connection that
 * another request needs.
 *
 * - In this process, landings of one pipeline queue in memory, first come
 *   first served (`inAppendQueue`): a dozen HTTP posts behind one long
 *   landing wait without a connection each, so reads, `/health` and the
 *   stream keep theirs.
 * - Against other processes (a CLI `ingest`, another replica) the lock is
 *   tried, never waited for (`pg_try_advisory_xact_lock`): when another
 *   process holds it, the transaction is rolled back, the connection goes
 *   back to the pool, and the landing tries again after a backoff (20 ms,
 *   doubling, at most 1 s, with jitter: `backoffMs`).
 */
import type { QueryResult } from "pg";
import { rollback, withTransaction, type Pool, type PoolClient, type RolledBack } from "../db/pool.js";
import { backoffMs, sleep, type Backoff } from "../db/retry.js";
import { tryAppendLock, tryAppendLockText } from "../db/sql/ingest/tryAppendLock.js";

const queues = new WeakMap<Pool, Map<string, Promise<unknown>>>();

/**
 * Runs `fn` once every landing of `pipeline` queued before it on this pool has
 * finished (whether it succeeded or failed). Holds nothing while it waits.
 * @returns what `fn` returns; @throws what `fn` throws
 */
export function inAppendQueue<T>(pool: Pool, pipeline: string, fn: () => Promise<T>): Promise<T> {
  let byPipeline = queues.get(pool);
  if (!byPipeline) queues.set(pool, (byPipeline = new Map()));
  const previous = byPipeline.get(pipeline) ?? Promise.resolve();
  const run = previous.then(fn);
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  byPipeline.set(pipeline, tail);
  void tail.then(() => {
    if (byPipeline.get(pipeline) === tail) byPipeline.delete(pipeline);
  });
  return run;
}

/**
 * The landings of `pipeline` queued on `pool` in this process (the one in flight and those booked after it): a
 * promise that settles when the last of them has finished, or undefined when none is queued.
 */
export function appendQueueTail(pool: Pool, pipeline: string): Promise<unknown> | undefined {
  return queues.get(pool)?.get(pipeline);
}

/** Resolves once every landing queued on `pool` so far has finished (for a graceful stop). */
export async function appendQueuesIdle(pool: Pool): Promise<void> {
  for (;;) {
    const pending = [...(queues.get(pool)?.values() ?? [])];
    if (pending.length === 0) return;
    await Promise.all(pending);
  }
}

/** The wait between two tries of the lock. */
const APPEND_LOCK_BACKOFF: Backoff = { baseMs: 20, capMs: 1_000 };
/** Returned through `rollback` when another session holds the lock. */
const BUSY = Symbol("append lock busy");

/**
 * Runs `fn` in one transaction (`withTransaction`) that holds the pipeline's
 * bronze-append lock from its first statement until it commits or rolls
 * back. While another session holds the lock, the transaction is rolled
 * back, its connection returned, and the lock tried again after a backoff.
 * Call it inside `inAppendQueue` so that this process never has two
 * connections waiting for the same pipeline.
 * @returns what `fn` returns (`fn` may end the transaction with `rollback(value)`)
 * @throws connection errors (a pool acquisition timeout included), or what `fn` or COMMIT threw; nothing is held then
 */
async function withAppendLock<T>(
  pool: Pool,
  pipeline: string,
  fn: (client: PoolClient) => Promise<T | RolledBack<T>>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const result = await withTransaction<T | typeof BUSY>(pool, async (client) =>
      (await tryAppendLock(client, pipeline)) ? fn(client) : rollback(BUSY),
    );
    if (result !== BUSY) return result;
    await sleep(backoffMs(attempt, APPEND_LOCK_BACKOFF));
  }
}

/**
 * As `withAppendLock`, with `reads` sent in the same round trip as BEGIN and
 * the lock (one simple-protocol query): `fn` gets their results, in order.
 * They run after the lock statement, each with a snapshot of its own (READ
 * COMMITTED), so they see every landing committed before the lock was taken.
 * @param reads statements without parameters (`inlineParams`), separated by `;`, that change nothing: they also run when the lock is busy, and their results are then dropped
 * @returns what `fn` returns (`fn` may end the transaction with `rollback(value)`)
 * @throws as `withAppendLock`
 */
export async function withAppendLockReading<T>(
  pool: Pool,
  pipeline: string,
  reads: string,
  fn: (client: PoolClient, read: QueryResult[]) => Promise<T | RolledBack<T>>,
): Promise<T> {
  const begin = `BEGIN; ${tryAppendLockText(pipeline)}; ${reads}`;
  for (let attempt = 1; ; attempt++) {
    const result = await withTransaction<T | typeof BUSY>(
      pool,
      async (client, opened) => {
        const [, lock, ...read] = opened as QueryResult[];
        return lock!.rows[0].locked === true ? fn(client, read) : rollback(BUSY);
      },
      begin,
    );
    if (result !== BUSY) return result;
    await sleep(backoffMs(attempt, APPEND_LOCK_BACKOFF));
  }
}
