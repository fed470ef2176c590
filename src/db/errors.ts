/**
 * The database's errors in groups, decided in one place: by SQLSTATE
 * (PostgreSQL Appendix A, "PostgreSQL Error Codes"), by Node's socket error
 * codes, and by node-postgres' own messages for a connection that died (they
 * carry no code). Callers ask a group (`isUnavailable`, `isRetryable`, …),
 * never a code.
 *
 * An error without a code of its own is classified by its `cause` (an error
 * that wraps a database error keeps it there, e.g. drizzle's query error).
 */
import type { DatabaseError } from "pg";

/** The SQLSTATEs the service acts on. */
const SqlState = {
  UNIQUE_VIOLATION: "23505",
  SERIALIZATION_FAILURE: "40001",
  DEADLOCK_DETECTED: "40P01",
  TOO_MANY_CONNECTIONS: "53300",
  LOCK_NOT_AVAILABLE: "55P03",
  QUERY_CANCELED: "57014",
  ADMIN_SHUTDOWN: "57P01",
  CRASH_SHUTDOWN: "57P02",
  CANNOT_CONNECT_NOW: "57P03",
} as const;

/**
 * What went wrong, as the service reacts to it:
 * - `unavailable`: the database cannot be reached or is going away (class 08
 *   connection exception, 57P01-57P03 shutdown, 53300 too many connections,
 *   a refused, reset or timed-out socket, a client whose connection died)
 * - `busy`: no pooled connection became free within the pool's acquisition timeout
 * - `serialization`: 40001 serialization failure, 40P01 deadlock (run the transaction again)
 * - `unique_violation`: 23505 (a concurrent insert of the same key)
 * - `lock_not_available`: 55P03
 * - `data_exception`: class 22 (a value the statement cannot compute: overflow, division by zero, …)
 * - `query_canceled`: 57014 (statement timeout or a cancel request)
 * - `other`: anything else
 */
export type DbErrorGroup =
  | "unavailable"
  | "busy"
  | "serialization"
  | "unique_violation"
  | "lock_not_available"
  | "data_exception"
  | "query_canceled"
  | "other";

/** Node's socket error codes that mean the server cannot be reached. */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);
const SHUTDOWN_CODES = new Set<string>([
  SqlState.ADMIN_SHUTDOWN,
  SqlState.CRASH_SHUTDOWN,
  SqlState.CANNOT_CONNECT_NOW,
  SqlState.TOO_MANY_CONNECTIONS,
]);
/** pg-pool's message when no connection became free within `connectionTimeoutMillis`. */
const POOL_TIMEOUT = /^timeout exceeded when trying to connect$/;
/** node-postgres' own messages for a client whose connection died mid-request (no code). */
const CONNECTION_DIED = /Connection terminated|connection timeout|is not queryable/i;

/** How deep `cause` is followed. */
const MAX_CAUSES = 5;

function groupOfCode(code: string): DbErrorGroup | undefined {
  if (code.startsWith("08") || SHUTDOWN_CODES.has(code) || SOCKET_CODES.has(code)) return "unavailable";
  if (code === SqlState.SERIALIZATION_FAILURE || code === SqlState.DEADLOCK_DETECTED) return "serialization";
  if (code === SqlState.UNIQUE_VIOLATION) return "unique_violation";
  if (code === SqlState.LOCK_NOT_AVAILABLE) return "lock_not_available";
  if (code === SqlState.QUERY_CANCELED) return "query_canceled";
  if (code.length === 5 && code.startsWith("22")) return "data_exception";
  return undefined;
}

/**
 * The group of `e` (see `DbErrorGroup`): by its `code` (SQLSTATE or Node's),
 * else by node-postgres' message, else by its `cause`.
 * @returns `other` for anything not recognised, including non-errors
 */
export function classifyDbError(e: unknown): DbErrorGroup {
  let current = e;
  for (let depth = 0; depth <= MAX_CAUSES && typeof current === "object" && current !== null; depth++) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === "string") {
      const group = groupOfCode(code);
      if (group !== undefined) return group;
    }
    if (typeof message === "string") {
      if (POOL_TIMEOUT.test(message)) return "busy";
      if (CONNECTION_DIED.test(message)) return "unavailable";
    }
    if (typeof code === "string") return "other";
    current = (current as { cause?: unknown }).cause;
  }
  return "other";
}

/** True when the database cannot be reached or is going away (the API answers 503 `unavailable`). */
export function isUnavailable(e: unknown): boolean {
  return classifyDbError(e) === "unavailable";
}

/** True for pg-pool's acquisition timeout (the API answers 503 `busy`). */
export function isPoolTimeout(e: unknown): boolean {
  return classifyDbError(e) === "busy";
}

/**
 * True for the database's own data exception (SQLSTATE class 22, on `e`
 * itself, not on a cause): the failing window is isolated under a savepoint
 * (src/db/windowFailures.ts).
 */
export function isDataException(e: unknown): e is DatabaseError {
  return typeof (e as { code?: unknown } | null)?.code === "string" && classifyDbError(e) === "data_exception";
}

/**
 * True for the errors that mean "run the transaction again": serialization
 * failure, deadlock, lock not available, and a unique violation from a
 * concurrent insert of the same key (`withRetry`).
 */
export function isRetryable(e: unknown): boolean {
  const group = classifyDbError(e);
  return group === "serialization" || group === "unique_violation" || group === "lock_not_available";
}
