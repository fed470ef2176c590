/** What `GET /readyz` reads of the migrations table (src/db/migrate.ts: drizzle's `straggler.__drizzle_migrations`). */
import type { Queryable } from "../../pool.js";

const APPLIED_SQL = "SELECT created_at::bigint AS at FROM straggler.__drizzle_migrations";

/**
 * The journal `when` (ms) of every migration recorded as applied; empty when the table does not
 * exist yet (a database never migrated).
 * @throws the database's or the pool's error when it cannot be reached
 */
export async function readAppliedMigrations(client: Queryable): Promise<Set<number>> {
  try {
    return new Set((await client.query(APPLIED_SQL)).rows.map((r: { at: string }) => Number(r.at)));
  } catch (e) {
    // 3F000 no schema straggler, 42P01 no migrations table: nothing applied.
    if ((e as { code?: string }).code === "42P01" || (e as { code?: string }).code === "3F000") return new Set();
    throw e;
  }
}
