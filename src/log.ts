/** Structured logging (pino). Logs go to stderr so CLI output on stdout stays clean. */
import { pino, type Logger } from "pino";

export type { Logger };

/** A pino logger at `level` writing JSON lines to stderr. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "straggler" } }, pino.destination(2));
}
