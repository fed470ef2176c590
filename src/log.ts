/**
 * Structured logging (pino). The service (`serve`) logs on stdout, as a twelve-factor service
 * does (it prints nothing else there); every other command logs on stderr, so its output on
 * stdout stays clean.
 */
import { pino, type Logger } from "pino";
import type { Env } from "./config/env.js";
import { REDACTED, redactSecrets } from "./secrets.js";

export type { Logger };

/**
 * Request and response headers that carry credentials: written as `[Redacted]` in every log line
 * (pino-http logs each request's headers).
 */
const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie", "x-api-key", "x-auth-token"];
const REDACTED_PATHS = [
  ...CREDENTIAL_HEADERS.map((h) => `req.headers["${h}"]`),
  'res.headers["set-cookie"]',
  // An error logged with the options of the pg client that raised it.
  "err.client.password",
  "err.config.password",
  "password",
  "connectionString",
];

/**
 * A pino logger at `level` writing JSON lines to `to` (default stderr). Credential headers are
 * redacted by path, and every line is scrubbed of the secrets the process knows (src/secrets.ts:
 * the API tokens, the database password) whatever field they would appear in.
 */
export function createLogger(level: string, to: "stdout" | "stderr" = "stderr"): Logger {
  return pino(
    {
      level,
      base: { service: "straggler" },
      redact: { paths: REDACTED_PATHS, censor: REDACTED },
      hooks: { streamWrite: redactSecrets },
    },
    pino.destination(to === "stdout" ? 1 : 2),
  );
}

/**
 * How long a command runs: `service` (`serve`: logs what it does, on stdout), `long-running`
 * (`stream`: logs what it does on stderr, prints its batches on stdout) or `one-shot` (`ingest`,
 * `correct`, `lateness`, `status`, …: they print a summary on stdout).
 */
export type CommandKind = "service" | "long-running" | "one-shot";

/** Where a command of `kind` logs: the service on stdout, every other command on stderr. */
export function logStream(kind: CommandKind): "stdout" | "stderr" {
  return kind === "service" ? "stdout" : "stderr";
}

/**
 * The log level of a command: `STRAGGLER_LOG_LEVEL` when set; else a long-running command
 * logs at `LOG_LEVEL` (default `info`), and a one-shot command at `info` with `--verbose`
 * and at `warn` without it (quiet: its stderr stays empty when all goes well).
 */
export function commandLogLevel(
  kind: CommandKind,
  env: Pick<Env, "LOG_LEVEL" | "STRAGGLER_LOG_LEVEL">,
  verbose: boolean,
): string {
  if (env.STRAGGLER_LOG_LEVEL !== undefined) return env.STRAGGLER_LOG_LEVEL;
  if (kind !== "one-shot") return env.LOG_LEVEL;
  return verbose ? "info" : "warn";
}
