/**
 * drizzle over a pool or a client, for simple statements and view reads.
 * drizzle reads `timestamptz` as PostgreSQL's text (not the pool's ISO
 * parser) and `bigint` through the column's mode: select instants with
 * plain SQL, or map them, where a caller expects ISO 8601.
 */
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { DrizzleQueryError } from "drizzle-orm/errors";
import type { Queryable } from "./pool.js";

/** A drizzle database running its statements on `client`. Cheap: nothing is prepared or connected until a statement runs. */
export function orm(client: Queryable): NodePgDatabase {
  return drizzle({ client });
}

/**
 * Executes a drizzle statement (built, or prepared under its name).
 * @throws the database's own error (its SQLSTATE `code` and message), not
 *   drizzle's wrapper, whose message would repeat the statement and its
 *   parameters: callers classify errors by `code` and show the message
 */
export async function execute<T>(statement: { execute(): Promise<T> }): Promise<T> {
  try {
    return await statement.execute();
  } catch (e) {
    throw e instanceof DrizzleQueryError && e.cause ? e.cause : e;
  }
}
