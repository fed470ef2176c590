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
 *   doubling, at most 1 s, with jitter).
 */
import { LockNamespace } from "../db/locks.js";
import type { Pool, PoolClient } from "../db/pool.js";

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

/** Resolves once every landing queued on `pool` so far has finished (for a graceful stop). */
export async function appendQueuesIdle(pool: Pool): Promise<void> {
  for (;;) {
    const pending = [...(queues.get(pool)?.values() ?? [])];
    if (pending.length === 0) return;
    await Promise.all(pending);
  }
}

const TRY_LOCK_SQL = "SELECT pg_try_advisory_xact_lock($1::int, hashtext($2)) AS locked";
const MAX_BACKOFF_MS = 1_000;

/**
 * A pooled client in an open transaction (`BEGIN`) that holds the pipeline's
 * bronze-append lock until it commits or rolls back. The caller releases it.
 * Call it inside `inAppendQueue` so that this process never has two
 * connections waiting for the same pipeline.
 * @throws connection errors (a pool acquisition timeout included); nothing is held then
 */
export async function acquireAppendLock(pool: Pool, pipeline: string): Promise<PoolClient> {
  for (let attempt = 0; ; attempt++) {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const { rows } = await client.query(TRY_LOCK_SQL, [LockNamespace.bronzeAppend, pipeline]);
      if (rows[0].locked === true) return client;
      await client.query("ROLLBACK");
      client.release();
    } catch (e) {
      await client.query("ROLLBACK").catch(() => undefined);
      client.release(e as Error);
      throw e;
    }
    const backoff = Math.min(MAX_BACKOFF_MS, 20 * 2 ** attempt);
    await new Promise((r) => setTimeout(r, backoff / 2 + Math.random() * (backoff / 2)));
  }
}
