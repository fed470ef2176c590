/**
 * What `straggler --help` prints after the commands: the environment variables the CLI and
 * the service read (source: src/config/env.ts) and the exit codes (source: main.ts).
 */
import { existsSync, readFileSync } from "node:fs";

export const ENVIRONMENT_HELP = `
Environment variables:
  DATABASE_URL                 postgres:// URL of the database; unset: the embedded PostgreSQL,
                               started by the command that needs it, data in STRAGGLER_DATA_DIR
  STRAGGLER_PIPELINES          the pipelines file (same as --config)
  STRAGGLER_DATA_DIR           folder of the embedded database (default .straggler)
  STRAGGLER_EMBEDDED_PORT      port of the embedded database
  STRAGGLER_API_TOKEN          bearer token the service requires for writes (16+ characters)
  STRAGGLER_READ_TOKEN         bearer token for reads only (16+ characters)
  DATABASE_URL_FILE, STRAGGLER_API_TOKEN_FILE, STRAGGLER_READ_TOKEN_FILE
                               a file holding that value instead (a Docker or Kubernetes
                               secret); one trailing newline is removed
  STRAGGLER_LOG_LEVEL          log level: fatal|error|warn|info|debug|trace|silent
  STRAGGLER_REPLICA_ID         this replica's name, when several services share a database
  STRAGGLER_LEASE_HEARTBEAT    a replica's lease heartbeat (a duration)
  STRAGGLER_GROUP_COMMIT       on|off: commit concurrent HTTP landings together (default on)
  STRAGGLER_READ_CONNECTIONS   connections of the read pool (default 2)
  STRAGGLER_READ_CONCURRENCY   reads served at once before 503 (default 4)
  STRAGGLER_READ_TIMEOUT       bound on one read (a duration)
  STRAGGLER_PROGRESS_EVERY     how often progress is printed on stderr when it is not a terminal
                               (a duration, default 5 seconds; 0 seconds: at every step)

Exit codes:
  0  done (also --help, --version)
  1  failed, or the command's own failure (e.g. a reconcile mismatch)
  2  usage or configuration error
`;

/**
 * The package's version (package.json "version", e.g. "0.1.0"): the nearest package.json above this
 * module (src/cli/ when run from source, dist/src/cli/ when built).
 */
export function packageVersion(): string {
  for (let up = "../../"; up.length < 40; up += "../") {
    const url = new URL(`${up}package.json`, import.meta.url);
    if (existsSync(url)) return (JSON.parse(readFileSync(url, "utf8")) as { version: string }).version;
  }
  return "unknown";
}
