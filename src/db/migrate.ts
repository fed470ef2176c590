/**
 * Applies the drizzle-kit migrations in `drizzle/` under an advisory lock, so
 * replicas starting together migrate once.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import type pg from "pg";
import { LockNamespace } from "./locks.js";

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../drizzle");

/** Applies pending migrations; safe to call from several processes at once. */
export async function runMigrations(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1::int, 0)", [LockNamespace.migrate]);
    await client.query("SET client_min_messages = warning");
    await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR, migrationsSchema: "straggler", migrationsTable: "__drizzle_migrations" });
  } finally {
    await client.query("SELECT pg_advisory_unlock($1::int, 0)", [LockNamespace.migrate]).catch(() => undefined);
    client.release();
  }
}
