/**
 * Applies the drizzle-kit migrations in `drizzle/` under an advisory lock, so
 * replicas starting together migrate once.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
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

/**
 * Applies the migrations numbered below `firstLeftOut` only (from a temporary copy of `drizzle/`
 * with the later ones left out): a database as an earlier release left it, for tests and benchmarks
 * of a migration (e.g. bronze before partitioning: `runMigrationsBefore(pool, 23)`). Takes no lock.
 */
export async function runMigrationsBefore(pool: pg.Pool, firstLeftOut: number): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "straggler-migrations-"));
  try {
    mkdirSync(path.join(dir, "meta"));
    const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, "meta", "_journal.json"), "utf8")) as { entries: { idx: number; tag: string }[] };
    journal.entries = journal.entries.filter((e) => e.idx < firstLeftOut);
    writeFileSync(path.join(dir, "meta", "_journal.json"), JSON.stringify(journal));
    for (const e of journal.entries) copyFileSync(path.join(MIGRATIONS_DIR, `${e.tag}.sql`), path.join(dir, `${e.tag}.sql`));
    const client = await pool.connect();
    try {
      await client.query("SET client_min_messages = warning");
      await migrate(drizzle(client), { migrationsFolder: dir, migrationsSchema: "straggler", migrationsTable: "__drizzle_migrations" });
    } finally {
      client.release();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
