/**
 * Process environment, validated once in `main()`.
 */
import { z } from "zod";
import { readDuration } from "./duration.js";
import { readEnvFiles } from "./envFiles.js";
import { ConfigError, formatIssues } from "./pipelines.js";
import { addEnvSecrets } from "../secrets.js";

const logLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
  error: "expected fatal|error|warn|info|debug|trace|silent",
});

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
  /** When set, the read routes need it (or STRAGGLER_API_TOKEN) as a bearer token; unset, reads are open (src/http/auth.ts). */
  STRAGGLER_READ_TOKEN: z.string().min(16, "expected a token of at least 16 characters").optional(),
  /** This replica's name, shown as the owner of its pipelines (default `host:pid`). */
  STRAGGLER_REPLICA_ID: z
    .string()
    .regex(/^[\x21-\x7e]{1,45}$/, "expected 1 to 45 printable ASCII characters without spaces")
    .optional(),
  /** The heartbeat of the replica's pipeline leases, a duration (`1 second`, `500 milliseconds`): takeover after an owner dies within about one heartbeat. */
  STRAGGLER_LEASE_HEARTBEAT: z
    .string()
    .default("1 second")
    .transform((text, ctx) => {
      const d = readDuration(text);
      if (!d.ok) ctx.addIssue({ code: "custom", message: d.message });
      else if (d.ms < 100 || d.ms > 60_000)
        ctx.addIssue({ code: "custom", message: "expected a duration from 100 milliseconds to 1 minute" });
      return d.ok ? d.ms : 0;
    }),
  /** Connections of the read pool (src/http/readBudget.ts): reads never use the ones landing and the stream need. */
  STRAGGLER_READ_CONNECTIONS: z.coerce
    .number({ error: "expected a whole number from 1 to 100" })
    .int()
    .min(1)
    .max(100)
    .default(2),
  /** Reads answered at once; one more is answered 503 `busy` with Retry-After (src/http/readBudget.ts). */
  STRAGGLER_READ_CONCURRENCY: z.coerce
    .number({ error: "expected a whole number from 1 to 1000" })
    .int()
    .min(1)
    .max(1000)
    .default(4),
  /** Longest read query (its statement_timeout), a duration (`30 seconds`): past it the read is answered 503 `read_timeout`. */
  STRAGGLER_READ_TIMEOUT: z
    .string()
    .default("30 seconds")
    .transform((text, ctx) => {
      const d = readDuration(text);
      if (!d.ok) ctx.addIssue({ code: "custom", message: d.message });
      else if (d.ms < 100 || d.ms > 3_600_000)
        ctx.addIssue({ code: "custom", message: "expected a duration from 100 milliseconds to 1 hour" });
      return d.ok ? d.ms : 0;
    }),
  /**
   * When stderr is not a terminal, how often a command's progress line is printed at most, a duration
   * (`5 seconds`; `0 seconds`: at every step of the work); src/cli/progressBar.ts.
   */
  STRAGGLER_PROGRESS_EVERY: z
    .string()
    .default("5 seconds")
    .transform((text, ctx) => {
      const d = readDuration(text);
      if (!d.ok) ctx.addIssue({ code: "custom", message: d.message });
      else if (d.ms > 3_600_000)
        ctx.addIssue({ code: "custom", message: "expected a duration from 0 seconds to 1 hour" });
      return d.ok ? d.ms : 0;
    }),
  /** `off`: every HTTP landing in a transaction of its own, instead of group commit (src/ingest/groupCommit.ts). */
  STRAGGLER_GROUP_COMMIT: z.enum(["on", "off"], { error: "expected on|off" }).default("on"),
});

export type Env = z.infer<typeof envSchema>;

/**
 * Validates `source` (default `process.env`), each `<NAME>_FILE` of src/config/envFiles.ts read in
 * place of `<NAME>`; throws `ConfigError` naming each bad variable.
 */
export function loadEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const cleaned = readEnvFiles(Object.fromEntries(Object.entries(source).filter(([, v]) => v !== "")));
  // Known before anything is logged or printed, even an invalid environment's message (src/secrets.ts).
  addEnvSecrets(cleaned);
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) throw new ConfigError(`invalid environment:\n${formatIssues(parsed.error)}`);
  return parsed.data;
}
