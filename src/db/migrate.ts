/**
 * Applies the drizzle-kit migrations in `drizzle/` under an advisory lock, so
 * replicas starting together migrate once, then any migration an earlier
 * migrate skipped (see `applySkippedMigrations`).
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/node-postgres";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import type pg from "pg";
import { LockNamespace } from "./locks.js";

/**
 * The repository's `drizzle/` folder: two levels up from src/db/migrate.ts, three from
 * the compiled dist/src/db/migrate.js (scripts/build.mjs keeps src/'s layout under dist/).
 */
export const MIGRATIONS_DIR = ((here: string) => {
  const fromSources = path.resolve(here, "../../drizzle");
  return existsSync(fromSources) ? fromSources : path.resolve(here, "../../../drizzle");
})(path.dirname(fileURLToPath(import.meta.url)));

/** Where drizzle records applied migrations: one row each, `hash` (sha256 of the file's text) and `created_at` (the journal's `when`, ms). */
const MIGRATIONS_SCHEMA = "straggler";
const MIGRATIONS_TABLE = "__drizzle_migrations";

/** What migrate logs to: a pino `Logger` fits. */
interface MigrationLog {
  info(fields: { migration: string }, msg: string): void;
}

export interface MigrateOptions {
  /** Receives one info line per skipped migration applied (the service's logger); none when omitted. */
  log?: MigrationLog;
  /** The migrations folder (a journal in meta/_journal.json and one NNNN_name.sql per entry); default `drizzle/`. */
  migrationsFolder?: string;
}

/** A migration of the journal, as drizzle reads it, with its tag (the file name without `.sql`). */
export interface JournalMigration {
  tag: string;
  /** sha256 (hex) of the file's text: what drizzle records in `hash`. */
  hash: string;
  /** The journal entry's `when` (ms since the epoch): what drizzle records in `created_at`. */
  folderMillis: number;
  /** The statements, split at `--> statement-breakpoint` as drizzle splits them. */
  sql: string[];
}

/** A migration applied after an earlier migrate skipped it failed; it was rolled back and not recorded. */
class SkippedMigrationError extends Error {
  constructor(
    readonly tag: string,
    cause: unknown,
  ) {
    super(
      `migration ${tag} (skipped by an earlier migrate because a later-numbered one was applied first) failed and was rolled back: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = "SkippedMigrationError";
  }
}

/**
 * A migration would drop an object another depends on (PostgreSQL 2BP01, e.g. a view of a
 * user's reading a straggler view): migrations never drop them (no CASCADE: views are replaced
 * in place), so migrate stops, rolled back, naming them.
 */
export class DependentObjectsError extends Error {
  constructor(
    /** PostgreSQL's DETAIL: one line per dependent object (`view public.x depends on view straggler.y`). */
    readonly dependents: string,
    cause: unknown,
  ) {
    super(
      `a migration would drop objects that depend on straggler's (${dependents.split("\n").join("; ")}); nothing was changed (it was rolled back). ` +
        "Drop those objects, run migrate, then create them again",
      { cause },
    );
    this.name = "DependentObjectsError";
  }
}

/** `e` or one of its causes as a `DependentObjectsError` when it is PostgreSQL's 2BP01; else undefined. */
function dependentObjectsError(e: unknown): DependentObjectsError | undefined {
  for (let c: unknown = e; c instanceof Error; c = c.cause) {
    const pgError = c as Error & { code?: string; detail?: string };
    if (pgError.code === "2BP01") return new DependentObjectsError(pgError.detail ?? pgError.message, e);
  }
  return undefined;
}

/**
 * Applies pending migrations; safe to call from several processes at once. Drizzle's
 * migrate applies only the migrations whose journal `when` is later than the newest
 * applied one's; `applySkippedMigrations` applies, under the same lock, any older one
 * that is missing, before drizzle's (so migrations run in journal order) and after.
 * Throws `SkippedMigrationError` when one of those fails, and `DependentObjectsError`
 * when a migration would drop an object another depends on.
 */
export async function runMigrations(pool: pg.Pool, opts: MigrateOptions = {}): Promise<void> {
  const migrationsFolder = opts.migrationsFolder ?? MIGRATIONS_DIR;
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1::int, 0)", [LockNamespace.migrate]);
    await client.query("SET client_min_messages = warning");
    // Skipped ones first, so that every migration runs after the ones numbered before it (a later one may
    // change what a skipped one makes: 0039 narrows the bronze that 0023 partitions), then drizzle's, then
    // any a concurrent release left behind meanwhile.
    const journal = readJournalMigrations(migrationsFolder);
    const table = (await client.query("SELECT to_regclass($1) AS t", [`${MIGRATIONS_SCHEMA}.${MIGRATIONS_TABLE}`]))
      .rows[0].t as string | null;
    if (table !== null) await applySkippedMigrations(client, journal, opts.log);
    await migrate(drizzle(client), {
      migrationsFolder,
      migrationsSchema: MIGRATIONS_SCHEMA,
      migrationsTable: MIGRATIONS_TABLE,
    });
    await applySkippedMigrations(client, journal, opts.log);
  } catch (e) {
    throw dependentObjectsError(e) ?? e;
  } finally {
    await client.query("SELECT pg_advisory_unlock($1::int, 0)", [LockNamespace.migrate]).catch(() => undefined);
    client.release();
  }
}

/** The journal's migrations in journal order, read by drizzle's own reader (so each hash is the one drizzle records). */
export function readJournalMigrations(migrationsFolder: string): JournalMigration[] {
  const journal = JSON.parse(readFileSync(path.join(migrationsFolder, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string }[];
  };
  const files = readMigrationFiles({ migrationsFolder });
  return files.map((f, i) => ({
    tag: journal.entries[i]!.tag,
    hash: f.hash,
    folderMillis: f.folderMillis,
    sql: f.sql,
  }));
}

/**
 * The migrations an earlier migrate skipped, in journal order: neither the hash nor the
 * `when` of each is recorded, and its `when` is earlier than the newest recorded one's
 * (a later-numbered migration reached the database first, and drizzle never looks back).
 * A recorded `when` with another hash is a migration applied from an earlier text of its
 * file: applied, not skipped. `applied` is the migrations table's rows (`created_at` as
 * node-postgres returns a bigint: a string).
 */
export function findSkippedMigrations(
  journal: readonly JournalMigration[],
  applied: readonly { hash: string; created_at: string | number }[],
): JournalMigration[] {
  if (applied.length === 0) return [];
  const hashes = new Set(applied.map((r) => r.hash));
  const whens = new Set(applied.map((r) => Number(r.created_at)));
  const newest = Math.max(...whens);
  return journal.filter((m) => m.folderMillis < newest && !hashes.has(m.hash) && !whens.has(m.folderMillis));
}

/**
 * Applies each skipped migration (`findSkippedMigrations`) in journal order, each in its
 * own transaction with its row in the migrations table (hash, created_at = its `when`),
 * as drizzle would have. One query when none is missing. On a failure the migration is
 * rolled back and a `SkippedMigrationError` naming it is thrown; the ones before it stay
 * applied. The caller holds the migrate lock on `client`.
 */
async function applySkippedMigrations(
  client: pg.PoolClient | pg.Client,
  journal: readonly JournalMigration[],
  log?: MigrationLog,
): Promise<JournalMigration[]> {
  const table = `${MIGRATIONS_SCHEMA}.${MIGRATIONS_TABLE}`;
  const applied = (await client.query<{ hash: string; created_at: string }>(`SELECT hash, created_at FROM ${table}`))
    .rows;
  const skipped = findSkippedMigrations(journal, applied);
  for (const m of skipped) {
    log?.info(
      { migration: m.tag },
      `applying migration ${m.tag}, skipped by an earlier migrate because a later-numbered one was applied first`,
    );
    await client.query("BEGIN");
    try {
      for (const stmt of m.sql) await client.query(stmt);
      await client.query(`INSERT INTO ${table} (hash, created_at) VALUES ($1, $2)`, [m.hash, m.folderMillis]);
      await client.query("COMMIT");
    } catch (e) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw new SkippedMigrationError(m.tag, e);
    }
  }
  return skipped;
}

/**
 * A temporary copy of `drizzle/` (journal and files) with only the migrations whose number
 * `keep` accepts; the caller removes it (`rmSync(dir, { recursive: true })`).
 */
export function copyMigrationsFolder(keep: (idx: number) => boolean): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "straggler-migrations-"));
  mkdirSync(path.join(dir, "meta"));
  const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, "meta", "_journal.json"), "utf8")) as {
    entries: { idx: number; tag: string }[];
  };
  journal.entries = journal.entries.filter((e) => keep(e.idx));
  writeFileSync(path.join(dir, "meta", "_journal.json"), JSON.stringify(journal));
  for (const e of journal.entries)
    copyFileSync(path.join(MIGRATIONS_DIR, `${e.tag}.sql`), path.join(dir, `${e.tag}.sql`));
  return dir;
}

/**
 * Applies, with drizzle's migrate alone (no lock, no look back), the migrations whose number
 * `keep` accepts, from a temporary copy of `drizzle/`: a database as an earlier release left it,
 * for tests and benchmarks of a migration.
 */
export async function runMigrationsKeeping(pool: pg.Pool, keep: (idx: number) => boolean): Promise<void> {
  const dir = copyMigrationsFolder(keep);
  try {
    const client = await pool.connect();
    try {
      await client.query("SET client_min_messages = warning");
      await migrate(drizzle(client), {
        migrationsFolder: dir,
        migrationsSchema: MIGRATIONS_SCHEMA,
        migrationsTable: MIGRATIONS_TABLE,
      });
    } finally {
      client.release();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Applies the migrations numbered below `firstLeftOut` only (e.g. bronze before partitioning:
 * `runMigrationsBefore(pool, 23)`). Takes no lock.
 */
export async function runMigrationsBefore(pool: pg.Pool, firstLeftOut: number): Promise<void> {
  await runMigrationsKeeping(pool, (idx) => idx < firstLeftOut);
}
