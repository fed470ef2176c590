/** `replay`: land a dataset in arrival-time order, streaming after each micro-batch, then print a summary. */
import path from "node:path";
import type { Command } from "commander";
import { formatDuration, readDuration } from "../../config/duration.js";
import type { PipelineConfig } from "../../config/pipelines.js";
import type { ReplaySummary } from "../../replay/replay.js";
import type { BatchProgress } from "../../stream/runBatch.js";
import { checkInputFiles, json, landingFolderOf, pickOne, UsageError, withDb, type ContextOf } from "../context.js";
import { limitOption, moreInline } from "../lists.js";
import { batchLine, summaryLines } from "../print.js";
import { progressBar } from "../progressBar.js";

/** The progress line saying how the rows were put in arrival order (src/replay/ordering.ts). */
const ORDERED: Record<"file" | "memory" | "table", (rows: number) => string> = {
  file: (n) => `${n} rows already in arrival order: read from the file, not staged`,
  memory: (n) => `sorted ${n} rows in arrival order in memory`,
  table: (n) => `staged ${n} rows in arrival order`,
};

/** The micro-batch span: `--batch-span` when given, else the pipeline's `replay.batchSpan` (ms). */
function batchSpanOf(pipeline: PipelineConfig, spanText: string | undefined): number {
  const span = spanText !== undefined ? readDuration(spanText) : undefined;
  if (span !== undefined && !span.ok) throw new UsageError(`--batch-span: ${span.message}`);
  const batchSpanMs = span?.ok ? span.ms : pipeline.replay?.batchSpan;
  if (batchSpanMs === undefined || batchSpanMs <= 0)
    throw new UsageError(
      `--batch-span: expected a duration greater than zero like "1 hour", got ${JSON.stringify(spanText)}`,
    );
  return batchSpanMs;
}

/**
 * The summary's `elapsed` line. The rate counts only rows this run landed: a resumed
 * replay whose micro-batches were all landed before lands nothing and says so.
 */
export function elapsedLine(summary: Pick<ReplaySummary, "elapsedMs" | "skippedBatches">, rowsLanded: number): string {
  const seconds = `${(summary.elapsedMs / 1000).toFixed(1)} s`;
  if (rowsLanded === 0)
    return `${seconds} (0 rows landed${summary.skippedBatches ? ": every micro-batch was already landed (resumed)" : ""})`;
  return `${seconds} (${rowsLanded} rows landed, ${Math.round(rowsLanded / (summary.elapsedMs / 1000))} rows/s end to end)`;
}

export function replayCommand(program: Command, ctxOf: ContextOf): void {
  program
    .command("replay")
    .description(
      "land a dataset in arrival-time order, in micro-batches of a span of arrival time, streaming after each; then print a summary",
    )
    .requiredOption("-p, --pipeline <name>", "pipeline to replay into")
    .argument("[files...]", "files to replay (default: every file of the pipeline's landing folder)")
    .option(
      "--arrival-field <field>",
      "column holding each record's arrival time (default: the pipeline's replay.arrivalField)",
    )
    .option(
      "--batch-span <duration>",
      'arrival time per micro-batch, e.g. "1 hour" (default: the pipeline\'s replay.batchSpan)',
    )
    .option(...limitOption)
    .option(
      "--json",
      "print one JSON document: the replay's counts, every file refused, its last micro-batch and the pipeline's status after it",
    )
    .action(
      async (
        files: string[],
        opts: { pipeline: string; arrivalField?: string; batchSpan?: string; limit: number; json?: boolean },
      ) => {
        const ctx = await ctxOf();
        const [{ listLandingFiles }, { replay, replayFilesProblem }, { pipelineStatus }] = await Promise.all([
          import("../../ingest/landingEntries.js"),
          import("../../replay/replay.js"),
          import("../../stream/status.js"),
        ]);
        const pipeline = pickOne(ctx, opts.pipeline);
        const arrivalField = opts.arrivalField ?? pipeline.replay?.arrivalField;
        if (!arrivalField)
          throw new UsageError(`pipeline ${pipeline.name} has no replay.arrivalField; pass --arrival-field`);
        const batchSpanMs = batchSpanOf(pipeline, opts.batchSpan);
        checkInputFiles(files);
        const paths =
          files.length > 0
            ? files
            : (await listLandingFiles(await landingFolderOf(pipeline))).map((f) =>
                path.join(pipeline.source.landingDir!, f),
              );
        if (paths.length === 0) throw new UsageError(`no files to replay in ${pipeline.source.landingDir}`);
        const problem = replayFilesProblem(paths);
        if (problem !== undefined) throw new UsageError(`replay refused, nothing staged: ${problem}`);
        await withDb(ctx, async (db) => {
          const what = `${paths.length} file${paths.length === 1 ? "" : "s"} into ${pipeline.name} by ${arrivalField}, ${formatDuration(batchSpanMs)} of arrival time per micro-batch (${db.kind} database)`;
          // Progress (stderr): what starts, then the staging and the replay's bar or lines.
          process.stderr.write(`Replaying ${what}\n`);
          let bar: ReturnType<typeof progressBar> | undefined;
          let staged = 0;
          let ordering: "file" | "memory" | "table" = "table";
          let dropped = 0;
          let rowsLanded = 0;
          const rssPeak = { mb: 0 };
          const { startLoop } = await import("../../loop.js");
          const sample = startLoop(
            () => void (rssPeak.mb = Math.max(rssPeak.mb, process.memoryUsage.rss() / 2 ** 20)),
            { intervalMs: 200, immediate: false, onError: () => undefined },
          );
          let lastBatch: BatchProgress | undefined;
          try {
            const summary = await replay(db.pool, pipeline, {
              files: paths,
              arrivalField,
              batchSpanMs,
              onStaged: (n, how) => {
                staged = n;
                ordering = how;
                if (process.stderr.isTTY)
                  process.stderr.write(`\r${{ file: "checked", memory: "read", table: "staged" }[how]} ${n} rows`);
              },
              onRefused: (file, reason) =>
                console.error(`${pipeline.name}: ${file} refused (left out of the replay): ${reason}`),
              onBatch: ({ rowsDone, rowsTotal, land, batches }) => {
                if (!land.alreadyLanded) rowsLanded += land.landed;
                for (const b of batches) dropped += b.numRowsDroppedByWatermark;
                if (rowsDone === 0) return;
                if (batches.length > 0) lastBatch = batches[batches.length - 1];
                if (bar === undefined) {
                  process.stderr.write(`${process.stderr.isTTY ? "\n" : ""}${ORDERED[ordering](staged)}\n`);
                  bar = progressBar("replay", {
                    unit: "rows",
                    total: rowsTotal,
                    everyMs: ctx.env.STRAGGLER_PROGRESS_EVERY,
                  });
                }
                bar.update(
                  rowsDone,
                  lastBatch
                    ? `batch ${lastBatch.batchId}, watermark ${lastBatch.nextWatermark ?? "-"}, dropped so far ${dropped}`
                    : "",
                );
              },
            });
            bar?.stop();
            rssPeak.mb = Math.max(rssPeak.mb, process.memoryUsage.rss() / 2 ** 20);
            const status = await pipelineStatus(db.pool, pipeline.name);
            if (opts.json) {
              json({
                pipeline: pipeline.name,
                files: paths.length,
                arrivalField,
                batchSpanMs,
                ...summary,
                rowsLanded,
                peakRssMb: Math.round(rssPeak.mb),
                lastBatch: lastBatch ?? null,
                status,
              });
            } else {
              const refused = summary.refused.map((r) => path.basename(r.file));
              console.log(
                [
                  `${pipeline.name}: replayed ${what}: ${rowsLanded} rows landed in ${summary.replayBatches} micro-batches` +
                    `${summary.skippedBatches ? ` (${summary.skippedBatches} already landed: resumed)` : ""}, ${summary.streamBatches} stream batches, ` +
                    `watermark ${status.checkpoint?.watermark ?? "undefined"}${refused.length > 0 ? `; ${refused.length} file${refused.length === 1 ? "" : "s"} refused` : ""}`,
                  ...(lastBatch ? ["", "Last micro-batch progress:", batchLine(lastBatch), ""] : []),
                  ...summaryLines(status, {
                    "replay micro-batches": `${summary.replayBatches} landed${summary.skippedBatches ? `, ${summary.skippedBatches} already landed (resumed)` : ""}; ${summary.streamBatches} stream batches`,
                    elapsed: elapsedLine(summary, rowsLanded),
                    "peak RSS": `${Math.round(rssPeak.mb)} MB`,
                    ...(refused.length > 0 ? { "files refused": moreInline(refused, opts.limit) } : {}),
                  }),
                ].join("\n"),
              );
              if (summary.alreadyLanded !== null) console.log(summary.alreadyLanded);
              if (summary.landedBefore !== null) console.log(`${pipeline.name}: ${summary.landedBefore}`);
            }
            if (summary.refused.length > 0) process.exitCode = 1;
          } finally {
            await sample.stop();
          }
        });
      },
    );
}
