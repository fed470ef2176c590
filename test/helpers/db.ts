/**
 * Per-file database: cloned from the migrated template. Dropped at the end
 * when every test of the file passed; kept (and its name printed) otherwise,
 * for inspection.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, inject } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";

export interface TestDatabase {
  url: string;
  pool: Pool;
  name: string;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: inject("adminUrl") });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * Runs `fn` until it no longer fails with "being accessed by other users":
 * every 100 ms, 50 retries at most; `last` is true on the final attempt.
 */
export async function whileInUse(fn: (last: boolean) => Promise<unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await fn(attempt === 50);
      return;
    } catch (e) {
      if (attempt === 50 || !/being accessed by other users/.test((e as Error).message)) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Creates a database for this test file; call at the top level of the file. */
export function useTestDatabase(): () => Promise<TestDatabase> {
  let db: TestDatabase | undefined;
  let failed = false;
  afterEach((ctx) => {
    if (ctx.task.result?.state === "fail") failed = true;
  });
  afterAll(async () => {
    if (!db) return;
    if (failed) {
      // A failed test may have left a client checked out (a lock held for its scenario): pool.end() would wait for it.
      await Promise.race([db.pool.end(), new Promise((r) => setTimeout(r, 5_000).unref())]);
      console.log(`[test] kept database ${db.name} for inspection`);
      return;
    }
    await db.pool.end();
    // pool.end() resolves before its connections have closed. A FORCE drop now would
    // terminate them mid-close, and pg raises the server's FATAL as an uncaught
    // error. Wait for them to go (a drop without FORCE fails while any remain).
    await whileInUse((last) =>
      admin((c) => c.query(`DROP DATABASE IF EXISTS ${db!.name}${last ? " WITH (FORCE)" : ""}`)),
    );
  });
  return async () => {
    if (db) return db;
    const name = `straggler_t_${randomBytes(5).toString("hex")}`;
    // CREATE DATABASE … TEMPLATE fails while another session uses the template: retry briefly.
    await whileInUse(() => admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${inject("templateDb")}`)));
    const url = withDatabase(inject("adminUrl"), name);
    db = { url, pool: createPool(url, 5), name };
    return db;
  };
}

/** A new empty database (not migrated) for `fn`, with a pool of two; dropped after it, once its connections have gone. */
export async function withFreshDatabase(fn: (pool: Pool) => Promise<void>): Promise<void> {
  const name = `straggler_t_new_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  const admin = new pg.Client({ connectionString: inject("adminUrl") });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(inject("adminUrl"));
  u.pathname = `/${name}`;
  const pool = createPool(u.toString(), 2);
  try {
    await fn(pool);
  } finally {
    await pool.end();
    // pool.end() resolves before its connections have closed: drop once they have gone (a FORCE drop would kill them mid-close).
    await whileInUse(() => admin.query(`DROP DATABASE IF EXISTS ${name}`));
    await admin.end();
  }
}
