import pg from "pg";
import { describe, expect, it } from "vitest";
import { classifyDbError, isDataException, isPoolTimeout, isRetryable, isUnavailable } from "../../src/db/errors.js";
import { createPool } from "../../src/db/pool.js";
import { backoffMs } from "../../src/db/retry.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();

/** An error as node-postgres or Node raises it: a message and, when given, a code. */
function err(code: string | undefined, message = "x", cause?: unknown): Error {
  const e = new Error(message, cause === undefined ? undefined : { cause }) as Error & { code?: string };
  if (code !== undefined) e.code = code;
  return e;
}

/** The error `fn` rejects with. */
async function rejection(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}

describe("classifyDbError: SQLSTATE and connection errors in groups", () => {
  it("groups each code the service acts on", () => {
    const table: [string, string][] = [
      ["08000", "unavailable"],
      ["08006", "unavailable"],
      ["08P01", "unavailable"],
      ["57P01", "unavailable"],
      ["57P02", "unavailable"],
      ["57P03", "unavailable"],
      ["53300", "unavailable"],
      ["ECONNREFUSED", "unavailable"],
      ["ECONNRESET", "unavailable"],
      ["EPIPE", "unavailable"],
      ["ETIMEDOUT", "unavailable"],
      ["ENOTFOUND", "unavailable"],
      ["40001", "serialization"],
      ["40P01", "serialization"],
      ["23505", "unique_violation"],
      ["23503", "other"],
      ["55P03", "lock_not_available"],
      ["55000", "other"],
      ["57014", "query_canceled"],
      ["22012", "data_exception"],
      ["22003", "data_exception"],
      ["2200G", "data_exception"],
      ["42P01", "other"],
      ["XX000", "other"],
      ["ENOENT", "other"],
    ];
    expect(table.map(([code]) => [code, classifyDbError(err(code))])).toEqual(table);
  });

  it("reads node-postgres' messages for a dead connection and pg-pool's acquisition timeout, which carry no code", () => {
    expect(classifyDbError(err(undefined, "Connection terminated unexpectedly"))).toBe("unavailable");
    expect(classifyDbError(err(undefined, "Client has encountered a connection error and is not queryable"))).toBe(
      "unavailable",
    );
    expect(classifyDbError(err(undefined, "timeout exceeded when trying to connect"))).toBe("busy");
    expect(classifyDbError(err(undefined, "something else"))).toBe("other");
  });

  it("follows `cause` when the error has no code of its own, and stops at a code it does not know", () => {
    expect(classifyDbError(err(undefined, "wrapped", err("40001")))).toBe("serialization");
    expect(classifyDbError(err(undefined, "twice", err(undefined, "once", err("57P01"))))).toBe("unavailable");
    expect(classifyDbError(err("invalid_request", "a 400 made from a reset", err("ECONNRESET")))).toBe("other");
    expect([classifyDbError(undefined), classifyDbError(null), classifyDbError("40001"), classifyDbError(42)]).toEqual([
      "other",
      "other",
      "other",
      "other",
    ]);
  });

  it("answers the questions callers ask", () => {
    expect(["40001", "40P01", "55P03", "23505", "57014", "22012", "08006"].map((c) => isRetryable(err(c)))).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(["08006", "57P01", "ECONNREFUSED", "40001"].map((c) => isUnavailable(err(c)))).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect([
      isPoolTimeout(err(undefined, "timeout exceeded when trying to connect")),
      isPoolTimeout(err("08006")),
    ]).toEqual([true, false]);
    // A data exception must be the database's own error (the savepoint rolls back what it raised), not a wrapper's cause.
    expect([
      isDataException(err("22012")),
      isDataException(err(undefined, "wrapped", err("22012"))),
      isDataException(err("23505")),
    ]).toEqual([true, false, false]);
  });

  it("classifies the errors a real PostgreSQL and pg-pool raise", async () => {
    const { pool, url } = await getDb();
    expect(classifyDbError(await rejection(() => pool.query("SELECT 1 / 0")))).toBe("data_exception");
    expect(classifyDbError(await rejection(() => pool.query("SELECT 'x'::int")))).toBe("data_exception");
    expect(classifyDbError(await rejection(() => pool.query("SELECT * FROM no_such_table")))).toBe("other");

    const holder = await pool.connect();
    const waiter = await pool.connect();
    try {
      await holder.query("CREATE TEMP TABLE IF NOT EXISTS t (k int PRIMARY KEY)");
      await holder.query("INSERT INTO t VALUES (1)");
      expect(classifyDbError(await rejection(() => holder.query("INSERT INTO t VALUES (1)")))).toBe("unique_violation");
      await holder.query("BEGIN");
      await holder.query("SELECT pg_advisory_xact_lock(42)");
      await waiter.query("SET lock_timeout = '50ms'");
      expect(classifyDbError(await rejection(() => waiter.query("SELECT pg_advisory_lock(42)")))).toBe(
        "lock_not_available",
      );
      await waiter.query("SET statement_timeout = '50ms'");
      expect(classifyDbError(await rejection(() => waiter.query("SELECT pg_sleep(5)")))).toBe("query_canceled");
      await waiter.query("RESET statement_timeout; RESET lock_timeout");
      await holder.query("ROLLBACK");
    } finally {
      holder.release();
      waiter.release();
    }

    // A session terminated by an administrator (57P01, or the dead connection's own message).
    const victim = new pg.Client({ connectionString: url });
    victim.on("error", () => undefined);
    await victim.connect();
    const pid = (await victim.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
    // With a timeout, pg_terminate_backend waits until the session is gone (PostgreSQL 14+).
    await pool.query("SELECT pg_terminate_backend($1, 5000)", [pid]);
    expect(classifyDbError(await rejection(() => victim.query("SELECT 1")))).toBe("unavailable");
    await victim.end().catch(() => undefined);

    // Nothing listens on port 1: connection refused.
    const nowhere = new URL(url);
    nowhere.port = "1";
    const refused = new pg.Client({ connectionString: nowhere.toString() });
    expect(classifyDbError(await rejection(() => refused.connect()))).toBe("unavailable");

    // A pool of one whose connection is held: the next acquisition times out. The timeout is also the first
    // connection's (pg-pool has one setting), so it leaves room for a server busy with a full suite beside it.
    const small = createPool(url, 1, 1_000);
    const held = await small.connect();
    try {
      expect(classifyDbError(await rejection(() => small.connect()))).toBe("busy");
    } finally {
      held.release();
      await small.end();
    }
  });
});

describe("backoffMs: exponential, capped, equal jitter", () => {
  const backoff = { baseMs: 20, capMs: 1_000 };

  it("draws uniformly in [step/2, step): the bounds with a fixed random", () => {
    const steps = [1, 2, 3, 4, 5, 6, 7, 8].map((attempt) => [
      backoffMs(attempt, backoff, () => 0),
      backoffMs(attempt, backoff, () => 0.5),
      backoffMs(attempt, backoff, () => 0.999),
    ]);
    expect(steps).toEqual([
      [10, 15, 19.990000000000002],
      [20, 30, 39.980000000000004],
      [40, 60, 79.96000000000001],
      [80, 120, 159.92000000000002],
      [160, 240, 319.84000000000003],
      [320, 480, 639.6800000000001],
      [500, 750, 999.5],
      [500, 750, 999.5],
    ]);
  });

  it("stays within the bounds under Math.random, and treats an attempt below 1 as the first", () => {
    for (let i = 0; i < 1_000; i++) {
      const wait = backoffMs(3, { baseMs: 50, capMs: 5_000 });
      expect(wait >= 100 && wait < 200).toBe(true);
    }
    expect(backoffMs(0, backoff, () => 0)).toBe(10);
    expect(backoffMs(40, { baseMs: 500, capMs: 30_000 }, () => 1)).toBe(30_000);
  });
});
