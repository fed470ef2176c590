/** The health probe's statement (`GET /health`). */
import type { Queryable } from "../../pool.js";

const PING_SQL = "SELECT 1";

/**
 * Runs `SELECT 1`: resolves once the database has answered.
 * @throws the database's or the pool's error when it cannot be reached
 */
export async function ping(client: Queryable): Promise<void> {
  await client.query(PING_SQL);
}
