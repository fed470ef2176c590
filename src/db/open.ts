/**
 * Opens the database the environment names — `DATABASE_URL`, or the embedded
 * PostgreSQL under the data folder when it is unset — and migrates it.
 */
import type { Env } from "../config/env.js";
import type { Logger } from "../log.js";
import { startEmbeddedPostgres } from "./embedded.js";
import { runMigrations } from "./migrate.js";
import { createPool, type Pool } from "./pool.js";

export interface Database {
  pool: Pool;
  /** The connection URL (for LISTEN, which needs its own connection). */
  url: string;
  /** `embedded` or `external`, for logs and `status`. */
  kind: "embedded" | "external";
  close(): Promise<void>;
}

/** Embedded server port (overridable with `STRAGGLER_EMBEDDED_PORT`). */
const EMBEDDED_PORT = 54329;

/** The embedded server's TCP port: `STRAGGLER_EMBEDDED_PORT`, else 54329. */
export function embeddedPort(): number {
  return Number(process.env.STRAGGLER_EMBEDDED_PORT ?? EMBEDDED_PORT);
}

export async function openDatabase(env: Env, log: Logger, opts: { migrate?: boolean } = {}): Promise<Database> {
  let url = env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (url === undefined) {
    const embedded = await startEmbeddedPostgres(env.STRAGGLER_DATA_DIR, embeddedPort(), log);
    url = embedded.url;
    stopEmbedded = embedded.stop;
  }
  const pool = createPool(url);
  let closing = false;
  // pool.end() resolves before its connections have closed, so stopping the embedded
  // server right after it terminates them mid-close: expected then, not worth a warning.
  pool.on("error", (e) => {
    if (!closing)
      log.warn({ code: (e as { code?: string }).code, error: e.message }, "idle database connection failed");
  });
  try {
    if (opts.migrate !== false) await runMigrations(pool, { log });
  } catch (e) {
    await pool.end();
    await stopEmbedded?.();
    throw e;
  }
  return {
    pool,
    url,
    kind: stopEmbedded ? "embedded" : "external",
    async close() {
      closing = true;
      await pool.end();
      await stopEmbedded?.();
    },
  };
}
