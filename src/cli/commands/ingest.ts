/** `ingest`: land files, stdin or the landing folder in bronze (`sources`, what became of each, is sources.ts). */
import { statSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { formatDuration } from "../../config/duration.js";
import type { PipelineConfig } from "../../config/pipelines.js";
import type { Database } from "../../db/open.js";
import type { LandResult } from "../../ingest/landAnswer.js";
import type { BatchProgress } from "../../stream/runBatch.js";
import { checkInputFiles, json, landingFolderOf, pickOne, UsageError, withDb, type ContextOf } from "../context.js";
import { limitOption, moreLines } from "../lists.js";
import { batchesLines, landLine } from "../print.js";
import { progressBar } from "../progressBar.js";

/** What `ingest` did, as `--json` prints it: each landing as POST /pipelines/{p}/events answers, and the stream's batches. */
interface IngestReport {
  pipeline: string;
  landed: LandResult[];
  /** Landing-folder files landed before and unchanged. */
  skipped: string[];
  refused: { source: string; reason: string }[];
  /** Landing-folder files changed after they landed: not landed again. */
  changed: string[];
  /** Landing-folder files still settling (with --no-wait: left for a later run). */
  waiting: string[];
  batches: BatchProgress[];
}

/**
 * Lands the landing folder's new files into `report`; files modified less than source.settle ago may
 * still be being written: waits for them to settle (passes every 200 ms, saying so on stderr when it is a
 * terminal: progress, not a result), unless `wait` is false.
 * A file refused, or changed after it landed, is named on stderr as it is found.
 */
async function landFolder(db: Database, pipeline: PipelineConfig, wait: boolean, report: IngestReport): Promise<void> {
  const [{ landPendingFiles }, { startLoop }] = await Promise.all([
    import("../../ingest/landingFolder.js"),
    import("../../loop.js"),
  ]);
  const told = new Set<string>();
  let first = true;
  let failed: { error: unknown } | undefined;
  const landOnce = async (): Promise<"done" | undefined> => {
    const pass = await landPendingFiles(db.pool, pipeline);
    for (const r of pass.refused) console.error(`${pipeline.name}: ${r.name} refused: ${r.reason}`);
    for (const name of pass.changed)
      console.error(`${pipeline.name}: ${name} changed after landing; not landed again (see straggler sources)`);
    report.landed.push(...pass.landed);
    report.refused.push(...pass.refused.map((r) => ({ source: r.name, reason: r.reason })));
    report.changed.push(...pass.changed);
    if (first) report.skipped.push(...pass.unchanged);
    first = false;
    for (const name of pass.waiting.filter((n) => !told.has(n))) {
      told.add(name);
      if (wait && process.stderr.isTTY)
        console.error(
          `${pipeline.name}: ${name} waits to settle (modified less than ${formatDuration(pipeline.source.settle)} ago)`,
        );
    }
    report.waiting = pass.waiting;
    return pass.waiting.length === 0 || !wait ? "done" : undefined;
  };
  // A pass every 200 ms while files settle; a pass that fails ends the command with its error.
  const loop = startLoop(() => landOnce().catch((error: unknown) => ((failed = { error }), "done" as const)), {
    intervalMs: 200,
    onError: () => undefined,
  });
  await loop.done;
  if (failed) throw failed.error;
}

/**
 * `ingest` for people: the summary line (sources landed with their rows, already landed, refused,
 * changed after landing, waiting), then the first `limit` of each list: the landings, the files
 * already landed, the files left waiting (--no-wait); then the policy adopted by the stream if so
 * (`adopted`), and its micro-batches (`batchesLines`).
 * Refused and changed files were named on stderr as they were found.
 */
function ingestLines(
  r: IngestReport,
  limit: number,
  opts: { folder?: string; streamed: boolean; settle: number; adopted?: string[] },
): string[] {
  const p = r.pipeline;
  const now = r.landed.filter((l) => !l.alreadyLanded);
  const already = [...r.landed.filter((l) => l.alreadyLanded).map((l) => l.source), ...r.skipped];
  const rows = now.reduce((n, l) => n + l.landed, 0);
  const accepted = now.reduce((n, l) => n + l.accepted, 0);
  const others = [
    [already.length, "already landed"],
    [r.refused.length, "refused"],
    [r.changed.length, "changed after landing"],
    [r.waiting.length, "waiting to settle"],
  ] as const;
  const nothing = opts.folder !== undefined && now.length + others.reduce((n, [k]) => n + k, 0) === 0;
  return [
    nothing
      ? `${p}: no new files in ${opts.folder}`
      : `${p}: ${now.length} source${now.length === 1 ? "" : "s"} landed${now.length > 0 ? ` (${rows} rows: ${accepted} accepted, ${rows - accepted} quarantined)` : ""}` +
        others
          .filter(([n]) => n > 0)
          .map(([n, what]) => `, ${n} ${what}`)
          .join(""),
    ...moreLines(now, limit, landLine, { indent: `${p}: `, what: "sources landed" }),
    ...moreLines(already, limit, (name) => `${p}: ${name} already landed; skipped`, {
      indent: `${p}: `,
      what: "files already landed; skipped",
    }),
    ...moreLines(
      r.waiting,
      limit,
      (name) =>
        `${p}: ${name} waits to settle (modified less than ${formatDuration(opts.settle)} ago); not landed (--no-wait)`,
      { indent: `${p}: `, what: "files waiting to settle" },
    ),
    ...(opts.adopted ?? []),
    ...(opts.streamed ? batchesLines(p, r.batches, limit) : []),
  ];
}

/**
 * Lands the named files ('-' is stdin) into `report`, with progress on stderr: a file's in bytes
 * of its size (known from the start), stdin's as a count of rows (its size is not known).
 */
async function landFiles(
  db: Database,
  pipeline: PipelineConfig,
  files: string[],
  input: string | undefined,
  report: IngestReport,
  everyMs: number,
): Promise<void> {
  const [{ SourceRefused }, { landFile, landStream }] = await Promise.all([
    import("../../ingest/errors.js"),
    import("../../ingest/landFile.js"),
  ]);
  for (const f of files) {
    const bar =
      f === "-"
        ? progressBar("stdin", { unit: "rows", everyMs })
        : progressBar(path.basename(f), { unit: "bytes", total: statSync(f).size, everyMs });
    try {
      let r: LandResult;
      try {
        if (f === "-")
          r = await landStream(db.pool, pipeline, process.stdin, "stdin", Date.now(), input, (n) => bar.update(n));
        else
          r = await landFile(db.pool, pipeline, f, path.basename(f), {
            onProgress: (n, bytes) => bar.update(bytes, `${n.toLocaleString("en-US")} rows`),
            ...(input === undefined ? {} : { input }),
          });
      } finally {
        bar.stop();
      }
      report.landed.push(r);
    } catch (e) {
      if (!(e instanceof SourceRefused)) throw e;
      report.refused.push({ source: f, reason: e.message });
      console.error(`${pipeline.name}: ${f} refused: ${e.message}`);
    }
  }
}

export function ingestCommands(program: Command, ctxOf: ContextOf): void {
  program
    .command("ingest")
    .description("land files (or stdin with '-') in bronze; with no files, land the landing folder's new files")
    .requiredOption("-p, --pipeline <name>", "pipeline to land into")
    .argument("[files...]", "files to land; '-' reads stdin")
    .option(
      "--input <name>",
      "the input the named files (or stdin) come from: default, or a name under watermark.inputs",
    )
    .option("--stream", "run the stream until caught up afterwards")
    .option("--no-wait", "landing folder: do not wait for files modified less than source.settle ago")
    .option(...limitOption)
    .option(
      "--json",
      "print one JSON document: each landing (as POST /pipelines/{p}/events answers), the files skipped, refused, changed or waiting, and the stream's batches",
    )
    .action(
      async (
        files: string[],
        opts: { pipeline: string; input?: string; stream?: boolean; wait?: boolean; limit: number; json?: boolean },
      ) => {
        const ctx = await ctxOf();
        const pipeline = pickOne(ctx, opts.pipeline);
        checkInputFiles(files);
        if (opts.input !== undefined) {
          const { declaredInputs } = await import("../../core/pipelineSpec.js");
          const inputs = declaredInputs(pipeline);
          if (!inputs.includes(opts.input))
            throw new UsageError(
              `pipeline ${pipeline.name} has no input ${JSON.stringify(opts.input)}; its inputs are ${inputs.join(", ")} (watermark.inputs)`,
            );
          if (files.length === 0)
            throw new UsageError(
              `--input names the input of the files given (or stdin); the landing folder's inputs are its subfolders <landingDir>/<input>/`,
            );
        }
        if (files.length === 0) await landingFolderOf(pipeline);
        await withDb(ctx, async (db) => {
          const report: IngestReport = {
            pipeline: pipeline.name,
            landed: [],
            skipped: [],
            refused: [],
            changed: [],
            waiting: [],
            batches: [],
          };
          const adopted: string[] = [];
          if (files.length === 0) await landFolder(db, pipeline, opts.wait !== false, report);
          else await landFiles(db, pipeline, files, opts.input, report, ctx.env.STRAGGLER_PROGRESS_EVERY);
          if (opts.stream) {
            const [{ analyzeAfterLoad }, { runBatch }, { runUntilCaughtUp }] = await Promise.all([
              import("../../db/statistics.js"),
              import("../../stream/runBatch.js"),
              import("../../stream/streamLoop.js"),
            ]);
            // The files just landed on this pool: their sessions' last counts are reported before the check.
            await analyzeAfterLoad(db.pool, pipeline.name);
            const bar = progressBar(`stream ${pipeline.name}`, {
              unit: "rows",
              everyMs: ctx.env.STRAGGLER_PROGRESS_EVERY,
            });
            let rows = 0;
            try {
              report.batches = await runUntilCaughtUp(
                (t) => runBatch(db.pool, pipeline, t, { onPolicyAdopted: (a) => adopted.push(a.message) }),
                "available-now",
                (b) => bar.update((rows += b.numInputRows), `batch ${b.batchId}`),
              );
            } finally {
              bar.stop();
            }
          }
          if (!opts.json) {
            const folder = files.length === 0 ? pipeline.source.landingDir : undefined;
            console.log(
              [
                ...ingestLines(report, opts.limit, {
                  ...(folder === undefined ? {} : { folder }),
                  streamed: opts.stream === true,
                  settle: pipeline.source.settle,
                  adopted,
                }),
              ].join("\n"),
            );
          }
          if (opts.json) json(report);
          // A file refused, or changed after it landed (its new bytes are not landed): a script must not read success.
          if (report.refused.length > 0 || report.changed.length > 0) process.exitCode = 1;
        });
      },
    );
}
