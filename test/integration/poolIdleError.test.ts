/**
 * A pooled connection that dies while idle (the server terminates it, as a restart, a
 * `DROP DATABASE … WITH (FORCE)` or an administrator does) makes pg-pool emit 'error' on the
 * pool with the client attached. With no listener that error is thrown from the socket's
 * callback and ends the process; createPool (src/db/pool.ts) listens, so the pool drops the dead
 * client and the next query gets a new connection.
 */
import { describe, expect, it } from "vitest";
import { createPool } from "../../src/db/pool.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();

/** Resolves once `cond` holds, polling every 20 ms for at most 10 s. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
}

describe("createPool: an idle connection terminated by the server", () => {
  it("is dropped from the pool; the process goes on and the next query connects again", async () => {
    const { url, pool: admin } = await getDb();
    const pool = createPool(url, 2);
    try {
      // Two idle connections, each with its backend's pid.
      const [a, b] = [await pool.connect(), await pool.connect()];
      const pids = [
        (await a.query("SELECT pg_backend_pid() AS p")).rows[0].p,
        (await b.query("SELECT pg_backend_pid() AS p")).rows[0].p,
      ];
      a.release();
      b.release();
      expect([pool.totalCount, pool.idleCount]).toEqual([2, 2]);

      // Both terminated while idle: each one's 'error' reaches the pool, which removes it.
      const errors: string[] = [];
      pool.on("error", (e: Error & { code?: string }) => errors.push(e.code ?? e.message));
      for (const p of pids) await admin.query("SELECT pg_terminate_backend($1, 5000)", [p]);
      await until(() => pool.totalCount === 0);
      expect([pool.totalCount, errors]).toEqual([0, ["57P01", "57P01"]]);

      const { rows } = await pool.query("SELECT 41 + 1 AS n");
      expect([rows[0].n, pool.totalCount]).toEqual([42, 1]);
    } finally {
      await pool.end();
    }
  });

  it("needs no listener of the caller's: a pool nobody listens on survives it", async () => {
    const { url, pool: admin } = await getDb();
    const pool = createPool(url, 1);
    try {
      const pid = (await pool.query("SELECT pg_backend_pid() AS p")).rows[0].p;
      expect(pool.listenerCount("error")).toBe(1); // createPool's own
      await admin.query("SELECT pg_terminate_backend($1, 5000)", [pid]);
      await until(() => pool.totalCount === 0);
      expect(pool.totalCount).toBe(0);
      expect((await pool.query("SELECT pg_backend_pid() <> $1 AS other", [pid])).rows[0].other).toBe(true);
    } finally {
      await pool.end();
    }
  });
});
