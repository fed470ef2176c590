/**
 * Connection pool. Every session runs in UTC; `timestamptz` comes back as an
 * ISO 8601 UTC string, `numeric` as an exact decimal string, `bigint` counts
 * as numbers (sequence numbers stay far below 2^53).
 *
 * Prepared statements are planned for their actual parameters every time
 * (`plan_cache_mode = force_custom_plan`): a generic plan cannot see that a
 * batch's sequence range is small and may scan a pipeline's whole history.
 * JIT is off: compiling a micro-batch's statements costs more than running them.
 */
import pg from "pg";

const TIMESTAMPTZ = 1184;
const INT8 = 20;

/** A UTC session's timestamptz text with a four-digit year: the date, the fraction's digits (if any). */
const UTC_TEXT = /^(\d{4}-\d\d-\d\d) \d\d:\d\d:\d\d(?:\.(\d{1,6}))?\+00$/;

/**
 * PostgreSQL's `2026-10-01 12:00:00.123456+00` as ISO 8601 UTC, microseconds
 * kept: 3 fraction digits when the µs part is zero (`…12:00:00.500Z`), 6
 * otherwise (`…12:00:00.123456Z`), as `formatInstant` writes instants. Read
 * as ISO, not with `new Date(text)`, which takes years 0001-0099 for 1901-1999.
 */
export function parseTimestamptz(v: string): string {
  // What a UTC session sends (every pool's sessions are): `YYYY-MM-DD HH:MM:SS[.f…]+00`, a four-digit year,
  // rewritten as text, no Date (2.6 → 0.65 µs a value: a correction returns 9,357 windows at 1M events).
  const utc = UTC_TEXT.exec(v);
  if (utc !== null) {
    const micro = (utc[2] ?? "").padEnd(6, "0");
    return `${utc[1]}T${v.slice(11, 19)}.${micro.endsWith("000") ? micro.slice(0, 3) : micro}Z`;
  }
  // Years outside 0000-9999 (a window ending at 10000-01-01, one starting before 0001)
  // need ISO's expanded form: +010000-… / -000001-… (astronomical: 1 BC is year 0).
  const m = /^(\d{4,})(-.*?)( BC)?$/.exec(v);
  let text = v;
  if (m && (m[1]!.length > 4 || m[3])) {
    const year = m[3] ? 1 - Number(m[1]) : Number(m[1]);
    text = `${year < 0 ? "-" : "+"}${String(Math.abs(year)).padStart(6, "0")}${m[2]}`;
  }
  // Date keeps milliseconds only: the fraction's digits 4-6 are put back afterwards.
  // An offset shifts whole minutes, so it never changes the sub-millisecond digits.
  const fraction = /:\d\d\.(\d+)/.exec(text)?.[1] ?? "";
  const micro = fraction.slice(3, 6).padEnd(3, "0");
  const isoText = text
    .replace(" ", "T")
    .replace(/(:\d\d\.\d{1,3})\d*/, "$1")
    .replace(/([+-]\d\d)$/, "$1:00");
  const iso = new Date(isoText).toISOString();
  return micro === "000" ? iso : `${iso.slice(0, -1)}${micro}Z`;
}

const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === TIMESTAMPTZ) return parseTimestamptz;
    if (oid === INT8) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format);
  },
};

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that runs a query: a pool, a pooled client or a plain client. */
export type Queryable = pg.Pool | pg.PoolClient | pg.Client;

/** Default longest wait for a pooled connection, ms (then pg-pool fails with "timeout exceeded when trying to connect"; the API answers 503 `busy`). */
const POOL_ACQUIRE_TIMEOUT_MS = 5_000;

/**
 * A pool on `url` with UTC sessions and the type parsers above.
 * @param max connections at most
 * @param acquireTimeoutMs longest wait for a free connection (or for a new one to connect), ms
 * @param statementTimeoutMs the sessions' `statement_timeout`, ms (a statement running longer is cancelled by the server, SQLSTATE 57014); default none
 */
export function createPool(
  url: string,
  max = 10,
  acquireTimeoutMs = POOL_ACQUIRE_TIMEOUT_MS,
  statementTimeoutMs?: number,
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: acquireTimeoutMs,
    options: `-c TimeZone=UTC -c plan_cache_mode=force_custom_plan -c jit=off${statementTimeoutMs === undefined ? "" : ` -c statement_timeout=${Math.round(statementTimeoutMs)}`}`,
    types: types as pg.CustomTypesConfig,
  });
  // pg-pool listens for errors only on idle clients. A checked-out client whose
  // connection dies (the server stops or restarts) emits 'error' with no
  // listener, which would crash the process. Its query in flight rejects anyway,
  // and the pool discards the broken client on release: the event can be ignored.
  pool.on("connect", (client) => client.on("error", () => undefined));
  // An idle client whose connection dies (the server terminates it, a database is dropped WITH (FORCE),
  // the connection closes while pool.end() is ending it) makes the pool emit 'error' with the client
  // attached; with no listener that error would crash the process. The pool has already discarded the
  // client and connects a new one on the next checkout, so nothing is lost: a caller that wants to log
  // it adds its own listener (src/db/open.ts).
  pool.on("error", () => undefined);
  return pool;
}

/** What `fn` returns to end its transaction with ROLLBACK instead of COMMIT (`rollback(value)`). */
export class RolledBack<T> {
  constructor(readonly value: T) {}
}

/** Ends the transaction of `inTransaction`/`withTransaction` with ROLLBACK; `value` is what they return. */
export function rollback<T>(value: T): RolledBack<T> {
  return new RolledBack(value);
}

/**
 * The one way a transaction is opened: runs `fn` between `begin` and
 * `COMMIT` on `client` (or `ROLLBACK` when `fn` returns `rollback(value)`);
 * on any error rolls back and rethrows the error unchanged. The caller keeps
 * `client` (for a session's temporary table that outlives the transaction,
 * e.g. replay's staging).
 * @param begin the statement that opens it, e.g. `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`; it may
 *   be followed by more statements without parameters (`BEGIN; SELECT …`, one simple-protocol query), whose
 *   results `fn` gets as its second argument (pg's array of results); when it fails, ROLLBACK is sent too
 * @returns what `fn` returns, once COMMIT (or ROLLBACK) has been answered
 * @throws what `fn`, COMMIT or that ROLLBACK threw; the ROLLBACK sent after an error (which fails too on a lost connection) is never reported over it
 */
export async function inTransaction<T>(
  client: pg.PoolClient,
  fn: (client: pg.PoolClient, opened: unknown) => Promise<T | RolledBack<T>>,
  begin = "BEGIN",
): Promise<T> {
  try {
    // `begin` may carry statements after BEGIN (one round trip): `fn` gets their results.
    const opened = await client.query(begin);
    const result = await fn(client, opened);
    if (result instanceof RolledBack) {
      await client.query("ROLLBACK");
      return result.value;
    }
    await client.query("COMMIT");
    return result;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw e;
  }
}

/**
 * Runs `fn` in one transaction (`inTransaction`) on a client of its own,
 * released afterwards whatever happens.
 * @param begin the statement that opens it, e.g. `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
 * @returns what `fn` returns, once COMMIT has been answered
 * @throws a pool error (acquisition timeout, connection refused), or what `fn` or COMMIT threw
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient, opened: unknown) => Promise<T | RolledBack<T>>,
  begin = "BEGIN",
): Promise<T> {
  const client = await pool.connect();
  try {
    return await inTransaction(client, fn, begin);
  } finally {
    client.release();
  }
}
