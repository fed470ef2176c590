/**
 * Process environment, validated once in `main()`.
 */
import { z } from "zod";
import { ConfigError, formatIssues } from "./pipelines.js";

const logLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], { error: "expected fatal|error|warn|info|debug|trace|silent" });

const envSchema = z.object({
  DATABASE_URL: z.string().url({ message: "expected a postgres:// connection URL" }).optional(),
  PORT: z.coerce.number({ error: "expected a TCP port number" }).int().min(0).max(65535).default(8080),
  /** The service's log level (`serve`, `stream`). */
  LOG_LEVEL: logLevel.default("info"),
  /** Every command's log level when set: wins over LOG_LEVEL, and over the one-shot commands' quiet default (src/log.ts). */
  STRAGGLER_LOG_LEVEL: logLevel.optional(),
  STRAGGLER_PIPELINES: z.string().default("pipelines/pipelines.yaml"),
  STRAGGLER_DATA_DIR: z.string().default(".straggler"),
  STRAGGLER_API_TOKEN: z.string().min(16, "expected a token of at least 16 characters").optional(),
});

export type Env = z.infer<typeof envSchema>;

/** Validates `source` (default `process.env`); throws `ConfigError` naming each bad variable. */
export function loadEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== ""));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) throw new ConfigError(`invalid environment:\n${formatIssues(parsed.error)}`);
  return parsed.data;
}
