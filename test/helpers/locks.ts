/**
 * Stopping a process at a known point: hold a lock it needs there, wait until
 * it blocks on it (pg_stat_activity), act, release.
 */
import type { Pool, PoolClient } from "../../src/db/pool.js";
import { waitFor } from "./service.js";

/** Holds what `lockSql` takes, in an open transaction on its own connection, until `release()` (a rollback). */
export async function holdLock(
  pool: Pool,
  lockSql: string,
  params: unknown[] = [],
): Promise<{ release: () => Promise<void> }> {
  const c: PoolClient = await pool.connect();
  await c.query("BEGIN");
  await c.query(lockSql, params);
  return {
    release: async () => {
      await c.query("ROLLBACK");
      c.release();
    },
  };
}

/**
 * Waits until a session of this database waits on a lock while running a statement matching `like`; returns its pid.
 * pg_stat_activity keeps a statement's first 1024 bytes (`track_activity_query_size`): `like` must match within them.
 * A wait for a table's lock is found by the lock instead (`blockedOnRelation`).
 */
export function blockedOn(pool: Pool, like: string, timeoutMs = 120_000): Promise<number> {
  return waitFor(
    `a session blocked on ${like}`,
    async () => {
      const { rows } = await pool.query(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
        [like],
      );
      return rows[0]?.pid as number | undefined;
    },
    timeoutMs,
  );
}

/**
 * Waits until a session of this database waits for a lock on `relation` (a qualified table name, pg_locks);
 * returns its pid. Unlike `blockedOn` it does not depend on the statement's text, which pg_stat_activity cuts
 * at `track_activity_query_size` (1024 bytes by default): a long statement's later parts are not in it.
 */
export function blockedOnRelation(pool: Pool, relation: string, timeoutMs = 120_000): Promise<number> {
  return waitFor(
    `a session waiting for a lock on ${relation}`,
    async () => {
      const { rows } = await pool.query(
        `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE NOT l.granted AND l.relation = $1::regclass AND a.datname = current_database()`,
        [relation],
      );
      return rows[0]?.pid as number | undefined;
    },
    timeoutMs,
  );
}

/** Waits until the backend `pid` has ended (a killed client's transaction has rolled back). */
export function backendGone(pool: Pool, pid: number): Promise<true> {
  return waitFor(`backend ${pid} to end`, async () => {
    const { rows } = await pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid]);
    return rows.length === 0 ? true : undefined;
  });
}
