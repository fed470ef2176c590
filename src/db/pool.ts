/**
 * Connection pool. Every session runs in UTC; `timestamptz` comes back as an
 * ISO 8601 UTC string, `numeric` as an exact decimal string, `bigint` counts
 * as numbers (sequence numbers stay far below 2^53).
 */
import pg from "pg";

const TIMESTAMPTZ = 1184;
const INT8 = 20;

const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === TIMESTAMPTZ) return (v: string) => new Date(v).toISOString();
    if (oid === INT8) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format);
  },
};

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/** A pool on `url` with UTC sessions and the type parsers above. */
export function createPool(url: string, max = 10): pg.Pool {
  return new pg.Pool({ connectionString: url, max, options: "-c TimeZone=UTC", types: types as pg.CustomTypesConfig });
}

/** Runs `fn` in one transaction on one client; rolls back and rethrows on error. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}
