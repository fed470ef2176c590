/** Structured logging (pino). Logs go to stderr so CLI output on stdout stays clean. */
import { pino, type Logger } from "pino";
import type { Env } from "./config/env.js";

export type { Logger };

/** A pino logger at `level` writing JSON lines to stderr. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "straggler" } }, pino.destination(2));
}

/**
 * How long a command runs: `long-running` (`serve`, `stream`: they log what they do) or
 * `one-shot` (`ingest`, `correct`, `lateness`, `status`, …: they print a summary on stdout).
 */
export type CommandKind = "long-running" | "one-shot";

/**
 * The log level of a command: `STRAGGLER_LOG_LEVEL` when set; else a long-running command
 * logs at `LOG_LEVEL` (default `info`), and a one-shot command at `info` with `--verbose`
 * and at `warn` without it (quiet: its stderr stays empty when all goes well).
 */
export function commandLogLevel(kind: CommandKind, env: Pick<Env, "LOG_LEVEL" | "STRAGGLER_LOG_LEVEL">, verbose: boolean): string {
  if (env.STRAGGLER_LOG_LEVEL !== undefined) return env.STRAGGLER_LOG_LEVEL;
  if (kind === "long-running") return env.LOG_LEVEL;
  return verbose ? "info" : "warn";
}
