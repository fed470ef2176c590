/** `stream` (run micro-batches over bronze) and `status` (per pipeline; `--json` for machines). */
import { Option, type Command } from "commander";
import type { PolicyAdoption } from "../../guards/index.js";
import { json, pick, withDb, type ContextOf } from "../context.js";
import type { BatchProgress } from "../../stream/runBatch.js";
import { limitOption, moreLines } from "../lists.js";
import { batchesLines, statusLines, statusSummaryLine } from "../print.js";
import { progressBar } from "../progressBar.js";
import { reportRefusal } from "../refusal.js";

export function streamCommands(program: Command, ctxOf: ContextOf): void {
  program
    .command("stream")
    .description("run micro-batches over bronze: --once runs one, --available-now (default) runs until caught up")
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .addOption(new Option("--once", "run a single micro-batch").conflicts("availableNow"))
    .option("--available-now", "run micro-batches until bronze is consumed (default)")
    .option(...limitOption)
    .option("--json", "print JSON: an array, one per pipeline, { pipeline, batches } with every micro-batch's progress")
    .action(async (opts: { pipeline: string; once?: boolean; limit: number; json?: boolean }) => {
      const ctx = await ctxOf("long-running");
      const [{ analyzeIfStale }, { runBatch }, { runUntilCaughtUp }] = await Promise.all([
        import("../../db/statistics.js"),
        import("../../stream/runBatch.js"),
        import("../../stream/streamLoop.js"),
      ]);
      await withDb(ctx, async (db) => {
        const out: { pipeline: string; batches: BatchProgress[] }[] = [];
        for (const pipeline of pick(ctx, opts.pipeline)) {
          // A policy adopted by a batch's guard is said after the pipeline's summary line, before its batches (not in --json).
          const adopted: string[] = [];
          const sayAdopted = (a: PolicyAdoption) => adopted.push(a.message);
          try {
            let batches: BatchProgress[];
            if (opts.once) {
              const b = await runBatch(db.pool, pipeline, "once", { onPolicyAdopted: sayAdopted });
              batches = b ? [b] : [];
            } else {
              await analyzeIfStale(db.pool, pipeline.name);
              // Progress on stderr, a count of rows (the backlog is not counted for it: no whole).
              const bar = progressBar(`stream ${pipeline.name}`, {
                unit: "rows",
                everyMs: ctx.env.STRAGGLER_PROGRESS_EVERY,
              });
              let rows = 0;
              try {
                batches = await runUntilCaughtUp(
                  (t) => runBatch(db.pool, pipeline, t, { onPolicyAdopted: sayAdopted }),
                  "available-now",
                  (b) => bar.update((rows += b.numInputRows), `batch ${b.batchId}`),
                );
              } finally {
                bar.stop();
              }
            }
            out.push({ pipeline: pipeline.name, batches });
            const [summary, ...lines] = batchesLines(pipeline.name, batches, opts.limit);
            if (!opts.json) console.log([summary, ...adopted, ...lines].join("\n"));
          } catch (e) {
            // A refused pipeline writes nothing: say why, go on with the others, exit with the worst code.
            if (!(await reportRefusal(e))) throw e;
          }
        }
        if (opts.json) json(out);
      });
    });

  program
    .command("status")
    .description(
      "watermark, stream, ledger, windows, sources, last batch, alerts and policy (live, unrecorded or refused) per pipeline",
    )
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .option(...limitOption)
    .option(
      "--json",
      "print JSON: an array, one per pipeline (every one), with the checkpoint and the last progress as well",
    )
    .action(async (opts: { pipeline: string; limit: number; json?: boolean }) => {
      const ctx = await ctxOf();
      const [{ alertViews }, { readOpenHold }, { checkPolicy }, { pipelineStatus }, { pipelineExtras }] =
        await Promise.all([
          import("../../observe/alerts.js"),
          import("../../db/sql/lifecycle/holds.js"),
          import("../../guards/index.js"),
          import("../../stream/status.js"),
          import("../../observe/pipelineExtras.js"),
        ]);
      await withDb(ctx, async (db) => {
        const all = await Promise.all(
          pick(ctx, opts.pipeline).map(async (pipeline) => ({
            ...(await pipelineStatus(db.pool, pipeline.name)),
            alerts: await alertViews(db.pool, pipeline),
            policy: await checkPolicy(db.pool, pipeline),
            hold: (await readOpenHold(db.pool, pipeline.name)) ?? null,
            ...(await pipelineExtras(db.pool, pipeline)),
          })),
        );
        if (opts.json) return json(all);
        // The summary, then a block per pipeline (the first --limit), each block after an empty line.
        console.log(
          [
            statusSummaryLine(all),
            ...moreLines(all, opts.limit, (s) => `\n${statusLines(s).join("\n")}`, { indent: "\n", what: "pipelines" }),
          ].join("\n"),
        );
      });
    });
}
