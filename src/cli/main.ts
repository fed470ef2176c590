#!/usr/bin/env node
/**
 * `straggler` — the CLI. Every command builds what it needs from the
 * validated config in `main()`; nothing runs at import time.
 */
import { statSync } from "node:fs";
import path from "node:path";
import { Command, CommanderError, Option } from "commander";
import { loadEnv, type Env } from "../config/env.js";
import { formatDuration, readDuration } from "../config/duration.js";
import { ConfigError, loadPipelines, type PipelineConfig } from "../config/pipelines.js";
import { openDatabase, type Database } from "../db/open.js";
import { LandingDirMissing, SourceRefused } from "../ingest/errors.js";
import { landFile, landStream } from "../ingest/landFile.js";
import { landPendingFiles, listLandingFiles } from "../ingest/landingFolder.js";
import type { LandResult } from "../ingest/copyToBronze.js";
import { createLogger, type Logger } from "../log.js";
import { replay } from "../replay/replay.js";
import { runCorrection } from "../correction/correct.js";
import { reconcile } from "../correction/reconcile.js";
import { formatInstant, parseInstant } from "../core/timestamps.js";
import { runBatch, type BatchProgress } from "../stream/runBatch.js";
import { pipelineStatus, sourceCounts } from "../stream/status.js";
import { runUntilCaughtUp } from "../stream/streamLoop.js";
import { analyzeIfStale } from "../db/statistics.js";
import { startService } from "../service.js";
import { progressBar } from "./progressBar.js";

class UsageError extends Error {
  override name = "UsageError";
}

interface Context {
  env: Env;
  log: Logger;
  pipelines: PipelineConfig[];
}

function context(configOpt: string | undefined): Context {
  const env = loadEnv();
  const log = createLogger(env.LOG_LEVEL);
  const pipelines = loadPipelines(configOpt ?? env.STRAGGLER_PIPELINES);
  return { env, log, pipelines };
}

function pick(ctx: Context, name: string | undefined): PipelineConfig[] {
  if (name === undefined || name === "all") return ctx.pipelines;
  const p = ctx.pipelines.find((x) => x.name === name);
  if (!p) throw new UsageError(`no pipeline named "${name}"; configured: ${ctx.pipelines.map((x) => x.name).join(", ")}`);
  return [p];
}

async function withDb<T>(ctx: Context, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(ctx.env, ctx.log);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const json = (v: unknown) => process.stdout.write(JSON.stringify(v, null, 2) + "\n");

function printLand(r: LandResult): void {
  const reasons = Object.entries(r.byReason).map(([k, v]) => `${k}=${v}`).join(" ");
  console.log(
    r.alreadyLanded
      ? `${r.pipeline}: ${r.source} already landed; skipped`
      : `${r.pipeline}: ${r.source}: landed ${r.landed}, accepted ${r.accepted}, quarantined ${r.quarantined}${reasons ? ` (${reasons})` : ""}`,
  );
}

function printBatch(p: BatchProgress): void {
  console.log(
    `${p.pipeline} batch ${p.batchId}: ${p.numInputRows} rows in ${p.durationMs} ms (${Math.round(p.processedRowsPerSecond ?? 0)} rows/s), ` +
      `watermark ${p.nextWatermark ?? "undefined"}, numRowsDroppedByWatermark ${p.numRowsDroppedByWatermark}, ` +
      `numRowsUpdated ${p.numRowsUpdated}, finalized ${p.numRowsFinalized}, numRowsTotal ${p.numRowsTotal}`,
  );
}

async function printSummary(db: Database, p: PipelineConfig, extra: Record<string, unknown> = {}): Promise<void> {
  const s = await pipelineStatus(db.pool, p.name);
  const reasons = Object.entries(s.ledger.quarantinedByReason).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
  const lines = [
    `Summary for ${p.name}`,
    ...Object.entries(extra).map(([k, v]) => `  ${k}: ${v}`),
    `  rows landed:              ${s.ledger.landed}`,
    `  accepted:                 ${s.ledger.accepted}`,
    `  quarantined:              ${s.ledger.quarantined} (${reasons})`,
    `  dropped by watermark:     ${s.numRowsDroppedByWatermark} (event, window) pairs, in ${s.windows.awaitingCorrection} windows awaiting correction`,
    `  windows open / final:     ${s.windows.open} / ${s.windows.final}${s.windows.corrected ? ` (+${s.windows.corrected} corrected)` : ""}`,
    `  final watermark:          ${s.checkpoint?.watermark ?? "undefined"}`,
    `  stream batches:           ${s.checkpoint ? s.checkpoint.batchId + 1 : 0}`,
  ];
  console.log(lines.join("\n"));
}

export function buildCli(): Command {
  const program = new Command("straggler")
    .description("Event-time windows in PostgreSQL that stay right when events arrive late")
    .addOption(new Option("-c, --config <file>", "pipelines file (YAML/JSON)").env("STRAGGLER_PIPELINES"))
    .showHelpAfterError()
    .exitOverride(); // inherited by the commands below: usage errors exit 2, not 1
  const ctxOf = () => context(program.opts().config as string | undefined);

  program
    .command("serve")
    .description("run the service: REST API and the stream loop of every pipeline (what `npm start` runs)")
    .action(async () => {
      const ctx = ctxOf();
      const db = await openDatabase(ctx.env, ctx.log);
      let service;
      try {
        service = await startService(ctx.env, db, ctx.pipelines, ctx.log);
      } catch (e) {
        // e.g. the port is in use: exit 1 with the reason, never a service that serves nothing.
        await db.close();
        throw e;
      }
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
      ctx.log.info("stopping");
      await service.stop();
      await db.close();
    });

  program
    .command("migrate")
    .description("apply the database migrations in drizzle/ and exit")
    .action(async () => {
      const ctx = ctxOf();
      await withDb(ctx, async (db) => console.log(`migrations applied (${db.kind} database)`));
    });

  program
    .command("ingest")
    .description("land files (or stdin with '-') in bronze; with no files, land the landing folder's new files")
    .requiredOption("-p, --pipeline <name>", "pipeline to land into")
    .argument("[files...]", "files to land; '-' reads stdin")
    .option("--stream", "run the stream until caught up afterwards")
    .option("--no-wait", "landing folder: do not wait for files modified less than source.settle ago")
    .action(async (files: string[], opts: { pipeline: string; stream?: boolean; wait?: boolean }) => {
      const ctx = ctxOf();
      const [p] = pick(ctx, opts.pipeline);
      checkInputFiles(files);
      if (files.length === 0) await landingFolderOf(p!);
      await withDb(ctx, async (db) => {
        let refused = 0;
        if (files.length === 0) {
          // Files modified less than source.settle ago may still be being written: wait for
          // them to settle (passes every 200 ms), unless --no-wait.
          const told = new Set<string>();
          for (let first = true; ; first = false) {
            const pass = await landPendingFiles(db.pool, p!);
            for (const r of pass.landed) printLand(r);
            for (const r of pass.refused) console.error(`${p!.name}: ${r.name} refused: ${r.reason}`);
            for (const name of pass.changed) console.error(`${p!.name}: ${name} changed after landing; not landed again (see straggler sources)`);
            if (first) for (const name of pass.unchanged) console.log(`${p!.name}: ${name} already landed; skipped`);
            refused += pass.refused.length;
            if (first && pass.landed.length + pass.refused.length + pass.changed.length + pass.waiting.length + pass.unchanged.length === 0) {
              console.log(`${p!.name}: no new files in ${p!.source.landingDir}`);
            }
            for (const name of pass.waiting.filter((n) => !told.has(n))) {
              told.add(name);
              console.log(`${p!.name}: ${name} waits to settle (modified less than ${formatDuration(p!.source.settle)} ago)${opts.wait === false ? "; not landed (--no-wait)" : ""}`);
            }
            if (pass.waiting.length === 0 || opts.wait === false) break;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
        for (const f of files) {
          try {
            if (f === "-") printLand(await landStream(db.pool, p!, process.stdin, "stdin"));
            else {
              const bar = progressBar(path.basename(f), 0);
              try {
                printLand(await landFile(db.pool, p!, f, path.basename(f), { onProgress: (n) => bar.update(n) }));
              } finally {
                bar.stop();
              }
            }
          } catch (e) {
            if (!(e instanceof SourceRefused)) throw e;
            refused++;
            console.error(`${p!.name}: ${f} refused: ${e.message}`);
          }
        }
        if (opts.stream) {
          await analyzeIfStale(db.pool, p!.name);
          for (const b of await runUntilCaughtUp((t) => runBatch(db.pool, p!, t), "available-now")) printBatch(b);
        }
        if (refused > 0) process.exitCode = 1;
      });
    });

  program
    .command("sources")
    .description("every source of a pipeline (files, requests, stdin, replay micro-batches) with its state: landed, refused (and why), changed_after_landing, waiting_to_settle")
    .requiredOption("-p, --pipeline <name>", "pipeline")
    .option("--state <state>", "only sources in this state")
    .option("--limit <n>", "at most this many, most recently seen first", "100")
    .option("--json", "print JSON")
    .action(async (opts: { pipeline: string; state?: string; limit: string; json?: boolean }) => {
      const ctx = ctxOf();
      const [p] = pick(ctx, opts.pipeline);
      const states = ["landed", "refused", "changed_after_landing", "waiting_to_settle"];
      if (opts.state !== undefined && !states.includes(opts.state)) throw new UsageError(`--state: expected one of ${states.join(", ")}, got ${JSON.stringify(opts.state)}`);
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit: expected a positive integer, got ${JSON.stringify(opts.limit)}`);
      await withDb(ctx, async (db) => {
        const counts = await sourceCounts(db.pool, p!.name);
        const { rows } = await db.pool.query(
          `SELECT source, kind, state, reason, size_bytes, rows, accepted, quarantined, last_seen FROM straggler.sources
            WHERE pipeline = $1 AND ($2::text IS NULL OR state = $2) ORDER BY last_seen DESC, source LIMIT $3`,
          [p!.name, opts.state ?? null, limit],
        );
        if (opts.json) return json({ pipeline: p!.name, byState: counts, rows });
        console.log(`${p!.name}: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(", ")}`);
        for (const r of rows) {
          const size = r.size_bytes === null ? "" : `, ${r.size_bytes} bytes`;
          console.log(`  ${r.state.padEnd(21)} ${r.kind.padEnd(6)} ${r.source}: ${r.rows} rows (${r.accepted} accepted, ${r.quarantined} quarantined)${size}${r.reason ? ` — ${r.reason}` : ""}`);
        }
      });
    });

  program
    .command("stream")
    .description("run micro-batches over bronze: --once runs one, --available-now (default) runs until caught up")
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .addOption(new Option("--once", "run a single micro-batch").conflicts("availableNow"))
    .option("--available-now", "run micro-batches until bronze is consumed (default)")
    .action(async (opts: { pipeline: string; once?: boolean }) => {
      const ctx = ctxOf();
      await withDb(ctx, async (db) => {
        for (const p of pick(ctx, opts.pipeline)) {
          if (opts.once) {
            const b = await runBatch(db.pool, p, "once");
            if (b) printBatch(b);
            else console.log(`${p.name}: nothing new in bronze`);
          } else {
            await analyzeIfStale(db.pool, p.name);
            const all = await runUntilCaughtUp((t) => runBatch(db.pool, p, t), "available-now", printBatch);
            if (all.length === 0) console.log(`${p.name}: nothing new in bronze`);
          }
        }
      });
    });

  program
    .command("status")
    .description("watermark, offsets, ledger and last progress per pipeline (JSON)")
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .action(async (opts: { pipeline: string }) => {
      const ctx = ctxOf();
      await withDb(ctx, async (db) => json(await Promise.all(pick(ctx, opts.pipeline).map((p) => pipelineStatus(db.pool, p.name)))));
    });

  program
    .command("replay")
    .description("land a dataset in arrival-time order, in micro-batches of a span of arrival time, streaming after each; then print a summary")
    .requiredOption("-p, --pipeline <name>", "pipeline to replay into")
    .argument("[files...]", "files to replay (default: every file of the pipeline's landing folder)")
    .option("--arrival-field <field>", "column holding each record's arrival time (default: the pipeline's replay.arrivalField)")
    .option("--batch-span <duration>", 'arrival time per micro-batch, e.g. "1 hour" (default: the pipeline\'s replay.batchSpan)')
    .action(async (files: string[], opts: { pipeline: string; arrivalField?: string; batchSpan?: string }) => {
      const ctx = ctxOf();
      const [p] = pick(ctx, opts.pipeline);
      const arrivalField = opts.arrivalField ?? p!.replay?.arrivalField;
      if (!arrivalField) throw new UsageError(`pipeline ${p!.name} has no replay.arrivalField; pass --arrival-field`);
      const spanText = opts.batchSpan;
      const span = spanText !== undefined ? readDuration(spanText) : undefined;
      if (span !== undefined && !span.ok) throw new UsageError(`--batch-span: ${span.message}`);
      const batchSpanMs = span?.ok ? span.ms : p!.replay?.batchSpan;
      if (batchSpanMs === undefined || batchSpanMs <= 0) throw new UsageError(`--batch-span: expected a duration greater than zero like "1 hour", got ${JSON.stringify(spanText)}`);
      checkInputFiles(files);
      const paths = files.length > 0 ? files : (await listLandingFiles(await landingFolderOf(p!))).map((f) => path.join(p!.source.landingDir!, f));
      if (paths.length === 0) throw new UsageError(`no files to replay in ${p!.source.landingDir}`);
      await withDb(ctx, async (db) => {
        console.log(`Replaying ${paths.length} file(s) into ${p!.name} by ${arrivalField}, ${formatDuration(batchSpanMs)} of arrival time per micro-batch (${db.kind} database)`);
        let bar: ReturnType<typeof progressBar> | undefined;
        let staged = 0;
        let dropped = 0;
        const rssPeak = { mb: 0 };
        const sample = setInterval(() => (rssPeak.mb = Math.max(rssPeak.mb, process.memoryUsage.rss() / 2 ** 20)), 200);
        let lastBatch: BatchProgress | undefined;
        try {
          const summary = await replay(db.pool, p!, {
            files: paths,
            arrivalField,
            batchSpanMs,
            onStaged: (n) => {
              staged = n;
              if (process.stderr.isTTY) process.stderr.write(`\rstaged ${n} rows`);
            },
            onRefused: (file, reason) => console.error(`${p!.name}: ${file} refused (left out of the replay): ${reason}`),
            onBatch: ({ rowsDone, rowsTotal, batches }) => {
              for (const b of batches) dropped += b.numRowsDroppedByWatermark;
              if (rowsDone === 0) return;
              if (batches.length > 0) lastBatch = batches[batches.length - 1];
              if (bar === undefined) {
                process.stderr.write(`${process.stderr.isTTY ? "\n" : ""}staged ${staged} rows in arrival order\n`);
                bar = progressBar("replay", rowsTotal);
              }
              bar.update(rowsDone, lastBatch ? `batch ${lastBatch.batchId}, watermark ${lastBatch.nextWatermark ?? "-"}, dropped so far ${dropped}` : "");
            },
          });
          bar?.stop();
          rssPeak.mb = Math.max(rssPeak.mb, process.memoryUsage.rss() / 2 ** 20);
          const rate = Math.round(summary.rowsStaged / (summary.elapsedMs / 1000));
          if (lastBatch) {
            console.log("\nLast micro-batch progress:");
            printBatch(lastBatch);
          }
          await printSummary(db, p!, {
            "replay micro-batches": `${summary.replayBatches} landed${summary.skippedBatches ? `, ${summary.skippedBatches} already landed (resumed)` : ""}; ${summary.streamBatches} stream batches`,
            "elapsed": `${(summary.elapsedMs / 1000).toFixed(1)} s (${rate} events/s end to end)`,
            "peak RSS": `${Math.round(rssPeak.mb)} MB`,
            ...(summary.refused.length > 0 ? { "files refused": summary.refused.map((r) => path.basename(r.file)).join(", ") } : {}),
          });
          if (summary.refused.length > 0) process.exitCode = 1;
        } finally {
          clearInterval(sample);
        }
      });
    });

  program
    .command("correct")
    .description("run a correction: windows awaiting correction, plus every final window in [--from, --to) when given; prints the run summary")
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .option("--from <instant>", "range start, ISO 8601 with zone")
    .option("--to <instant>", "range end (exclusive), ISO 8601 with zone")
    .option("--key <key...>", "only these group keys")
    .option("--null-key", "only the null group (with --key: it too)")
    .action(async (opts: { pipeline: string; from?: string; to?: string; key?: string[]; nullKey?: boolean }) => {
      const ctx = ctxOf();
      const range = rangeOption(opts);
      await withDb(ctx, async (db) => {
        let failed = false;
        for (const p of pick(ctx, opts.pipeline)) {
          const keys = opts.nullKey ? [...(opts.key ?? []), null] : opts.key;
          const s = await runCorrection(db.pool, p, { trigger: "cli", range, keys });
          failed ||= s.status === "failed";
          console.log(
            `${p.name}: correction run ${s.runId} ${s.status}: ${s.windowsExamined} windows examined, ${s.windowsChanged} changed, ` +
              `${s.eventsRecovered} late events recovered, ${s.windowsFailed ? `${s.windowsFailed} failed (straggler.failed_windows), ` : ""}${s.durationMs} ms${s.error ? ` — ${s.error}` : ""}`,
          );
          for (const c of s.changes.slice(0, 20)) {
            console.log(`  ${keyLabel(c.groupKey)} [${c.windowStart}, ${c.windowEnd}) count ${c.before?.count ?? "-"} -> ${c.after.count}, sum ${c.before?.sum ?? "-"} -> ${c.after.sum} (revision ${c.revision}, ${c.lateEventCount} late events)`);
          }
          if (s.changes.length > 20) console.log(`  … and ${s.changes.length - 20} more (straggler.corrections, run ${s.runId})`);
        }
        if (failed) process.exitCode = 1;
      });
    });

  program
    .command("reconcile")
    .description("compare every final window (in [--from, --to) when given) with a fresh recompute from bronze and check the ledger; exits 1 on any mismatch")
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .option("--from <instant>", "range start, ISO 8601 with zone")
    .option("--to <instant>", "range end (exclusive), ISO 8601 with zone")
    .option("--json", "print the full report as JSON")
    .action(async (opts: { pipeline: string; from?: string; to?: string; json?: boolean }) => {
      const ctx = ctxOf();
      const range = rangeOption(opts);
      await withDb(ctx, async (db) => {
        let bad = false;
        for (const p of pick(ctx, opts.pipeline)) {
          const r = await reconcile(db.pool, p, range);
          bad ||= !r.ok;
          if (opts.json) {
            json(r);
            continue;
          }
          console.log(
            `${p.name}: ${r.windowsChecked} final windows checked, ${r.mismatches.length} mismatches; ledger landed ${r.ledger.landed} = accepted ${r.ledger.accepted} + quarantined ${r.ledger.quarantined} ` +
              `(${r.ledger.balanced ? "balanced" : `NOT balanced: landed by source ${r.ledger.landedBySource}`}); backlog ${r.backlogRows} rows`,
          );
          for (const m of r.mismatches.slice(0, 50)) {
            const fmt = (a: typeof m.stored) => (a ? `count ${a.count} sum ${a.sum} min ${a.min} max ${a.max}` : "missing");
            console.log(`  ${keyLabel(m.groupKey)} [${m.windowStart}, ${m.windowEnd}) stored ${fmt(m.stored)}, expected ${fmt(m.expected)}`);
          }
          if (r.mismatches.length > 50) console.log(`  … and ${r.mismatches.length - 50} more (use --json)`);
          for (const f of r.failedWindows) {
            console.log(`  ${keyLabel(f.groupKey)} [${f.windowStart}, ${f.windowEnd}) cannot be recomputed: ${f.error} (SQLSTATE ${f.sqlstate}); a correction run quarantines its late rows`);
          }
        }
        if (bad) process.exitCode = 1;
      });
    });

  return program;
}

/** Named input files must exist and be files: a plain usage error (exit 2), not a raw ENOENT. */
function checkInputFiles(files: string[]): void {
  for (const f of files) {
    if (f === "-") continue;
    let st;
    try {
      st = statSync(f);
    } catch (e) {
      throw new UsageError((e as NodeJS.ErrnoException).code === "ENOENT" ? `no such file: ${f}` : `cannot read ${f}: ${(e as Error).message}`);
    }
    if (st.isDirectory()) throw new UsageError(`${f} is a folder; name the files to land (with no files, the pipeline's landing folder lands)`);
  }
}

/** The pipeline, once its landing folder is known to exist: a missing one is a usage error (exit 2), not "no files". */
async function landingFolderOf(p: PipelineConfig): Promise<PipelineConfig> {
  if (p.source.landingDir === undefined) throw new UsageError(`pipeline ${p.name} has no source.landingDir; name the files to land`);
  try {
    await listLandingFiles(p);
  } catch (e) {
    if (e instanceof LandingDirMissing) throw new UsageError(`pipeline ${p.name}: ${e.message}`);
    throw e;
  }
  return p;
}

/** A group key as the CLI prints it: `(null)` for the null group, `""` for the empty key. */
function keyLabel(key: string | null): string {
  return key === null ? "(null)" : key === "" ? "\"\"" : key;
}

function rangeOption(opts: { from?: string; to?: string }): { from: string; to: string } | undefined {
  if (opts.from === undefined && opts.to === undefined) return undefined;
  const from = opts.from === undefined ? undefined : parseInstant(opts.from, "iso8601", undefined);
  const to = opts.to === undefined ? undefined : parseInstant(opts.to, "iso8601", undefined);
  if (!from?.ok) throw new UsageError(`--from: expected an ISO 8601 instant with a zone, got ${JSON.stringify(opts.from)}`);
  if (!to?.ok) throw new UsageError(`--to: expected an ISO 8601 instant with a zone, got ${JSON.stringify(opts.to)}`);
  if (from.us >= to.us) throw new UsageError("--from must be before --to");
  return { from: formatInstant(from.us), to: formatInstant(to.us) };
}

async function main(): Promise<void> {
  // `straggler … | head` closes stdout early: that is not an error.
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(0);
    throw e;
  });
  try {
    await buildCli().parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander has printed its message; help and version are not errors.
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    if (e instanceof ConfigError || e instanceof UsageError) {
      console.error(`straggler: ${e.message}`);
      process.exitCode = 2;
      return;
    }
    console.error(`straggler: ${(e as Error).message}`);
    process.exitCode = 1;
  }
}

await main();
// Exit now with our code: a library's leftover handle must not keep a finished command alive.
process.exit(process.exitCode ?? 0);
