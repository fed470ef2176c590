/**
 * What every command shares: the validated environment and pipelines, the
 * database opened for one command, and the checks of command-line input
 * (each throws `UsageError`, which `main()` turns into exit code 2).
 *
 * Light to import: `straggler --help` loads every command's definition and
 * this module with them, so the configuration, the logger and the database
 * are imported when a command first needs them (`context`, `withDb`).
 */
import { statSync } from "node:fs";
import type { Env } from "../config/env.js";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Database } from "../db/open.js";
import { MAX_RESULTS_VERSION } from "../db/sql/stream/policyVersions.js";
import type { CommandKind, Logger } from "../log.js";

/** Bad command-line input: printed as `straggler: <message>`, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

export interface Context {
  env: Env;
  log: Logger;
  pipelines: PipelineConfig[];
}

/** What a command calls to build its context: `long-running` for `serve` and `stream`, one-shot otherwise (the default). */
export type ContextOf = (kind?: CommandKind) => Promise<Context>;

/**
 * Builds a command's context; `configFile` (from `--config`) wins over `STRAGGLER_PIPELINES`.
 * The logger's level follows `commandLogLevel` (src/log.ts): one-shot commands are quiet unless `verbose`.
 * @throws ConfigError for a bad environment or pipelines file
 */
export async function context(
  configFile: string | undefined,
  kind: CommandKind = "one-shot",
  verbose = false,
): Promise<Context> {
  const [{ loadEnv }, { loadPipelines }, { commandLogLevel, createLogger, logStream }] = await Promise.all([
    import("../config/env.js"),
    import("../config/pipelines.js"),
    import("../log.js"),
  ]);
  const env = loadEnv();
  const log = createLogger(commandLogLevel(kind, env, verbose), logStream(kind));
  const pipelines = loadPipelines(configFile ?? env.STRAGGLER_PIPELINES);
  return { env, log, pipelines };
}

/** The pipeline named `name`, or every pipeline for `all`/undefined. */
export function pick(ctx: Context, name: string | undefined): PipelineConfig[] {
  if (name === undefined || name === "all") return ctx.pipelines;
  const pipeline = ctx.pipelines.find((x) => x.name === name);
  if (!pipeline)
    throw new UsageError(`no pipeline named "${name}"; configured: ${ctx.pipelines.map((x) => x.name).join(", ")}`);
  return [pipeline];
}

/**
 * The one pipeline named `name`, for a command that acts on one pipeline.
 * @throws UsageError for `all` (it names every pipeline: the command would otherwise act on the first alone) and for an unknown name
 */
export function pickOne(ctx: Context, name: string): PipelineConfig {
  if (name === "all")
    throw new UsageError(
      `-p all names every pipeline; this command acts on one: name it (configured: ${ctx.pipelines.map((x) => x.name).join(", ")})`,
    );
  return pick(ctx, name)[0]!;
}

/**
 * A results version given on the command line (`--to`, `--drop`): a whole number from 1 to
 * `MAX_RESULTS_VERSION` (the version column is a PostgreSQL integer).
 * @throws UsageError naming `flag` and what was given
 */
export function versionArg(flag: string, text: string): number {
  const version = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(version) || version < 1 || version > MAX_RESULTS_VERSION) {
    throw new UsageError(
      `${flag}: expected a version number (1, 2, … up to ${MAX_RESULTS_VERSION}), got ${JSON.stringify(text)}`,
    );
  }
  return version;
}

/** Opens (and migrates) the database, runs `fn`, closes it (stopping an embedded server this process started). */
export async function withDb<T>(ctx: Context, fn: (db: Database) => Promise<T>): Promise<T> {
  const { openDatabase } = await import("../db/open.js");
  const db = await openDatabase(ctx.env, ctx.log);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** Prints `v` as indented JSON on stdout. */
export const json = (v: unknown) => process.stdout.write(JSON.stringify(v, null, 2) + "\n");

/** Named input files must exist and be files: a plain usage error (exit 2), not a raw ENOENT. */
export function checkInputFiles(files: string[]): void {
  for (const f of files) {
    if (f === "-") continue;
    let st;
    try {
      st = statSync(f);
    } catch (e) {
      throw new UsageError(
        (e as NodeJS.ErrnoException).code === "ENOENT"
          ? `no such file: ${f}`
          : `cannot read ${f}: ${(e as Error).message}`,
      );
    }
    if (st.isDirectory())
      throw new UsageError(
        `${f} is a folder; name the files to land (with no files, the pipeline's landing folder lands)`,
      );
  }
}

/** The pipeline, once its landing folder is known to exist: a missing one is a usage error (exit 2), not "no files". */
export async function landingFolderOf(pipeline: PipelineConfig): Promise<PipelineConfig> {
  if (pipeline.source.landingDir === undefined)
    throw new UsageError(`pipeline ${pipeline.name} has no source.landingDir; name the files to land`);
  const [{ LandingDirMissing }, { listLandingFiles }] = await Promise.all([
    import("../ingest/errors.js"),
    import("../ingest/landingEntries.js"),
  ]);
  try {
    await listLandingFiles(pipeline);
  } catch (e) {
    if (e instanceof LandingDirMissing) throw new UsageError(`pipeline ${pipeline.name}: ${e.message}`);
    throw e;
  }
  return pipeline;
}

/** `--from`/`--to` as ISO 8601 UTC strings (both or neither; from before to). */
export async function rangeOption(opts: {
  from?: string;
  to?: string;
}): Promise<{ from: string; to: string } | undefined> {
  if (opts.from === undefined && opts.to === undefined) return undefined;
  const [{ formatInstant }, { parseInstant }] = await Promise.all([
    import("../core/instants.js"),
    import("../core/timestamps.js"),
  ]);
  const from = opts.from === undefined ? undefined : parseInstant(opts.from, "iso8601", undefined);
  const to = opts.to === undefined ? undefined : parseInstant(opts.to, "iso8601", undefined);
  if (!from?.ok)
    throw new UsageError(`--from: expected an ISO 8601 instant with a zone, got ${JSON.stringify(opts.from)}`);
  if (!to?.ok) throw new UsageError(`--to: expected an ISO 8601 instant with a zone, got ${JSON.stringify(opts.to)}`);
  if (from.us >= to.us) throw new UsageError("--from must be before --to");
  return { from: formatInstant(from.us), to: formatInstant(to.us) };
}
