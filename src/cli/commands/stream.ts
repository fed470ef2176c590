/** `stream` (run micro-batches over bronze) and `status` (per pipeline; `--json` for machines). */
import { Option, type Command } from "commander";
import type { PolicyAdoption } from "../../stream/policyGuard.js";
import { json, pick, withDb, type ContextOf } from "../context.js";
import { printBatch, statusLines } from "../print.js";
import { reportRefusal } from "../refusal.js";

/** A policy adopted by a batch's guard, on stdout with the batches. */
const sayAdopted = (a: PolicyAdoption) => console.log(a.message);

export function streamCommands(program: Command, ctxOf: ContextOf): void {
  program
    .command("stream")
    .description("run micro-batches over bronze: --once runs one, --available-now (default) runs until caught up")
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .addOption(new Option("--once", "run a single micro-batch").conflicts("availableNow"))
    .option("--available-now", "run micro-batches until bronze is consumed (default)")
    .action(async (opts: { pipeline: string; once?: boolean }) => {
      const ctx = await ctxOf("long-running");
      const [{ analyzeIfStale }, { runBatch }, { runUntilCaughtUp }] = await Promise.all([import("../../db/statistics.js"), import("../../stream/runBatch.js"), import("../../stream/streamLoop.js")]);
      await withDb(ctx, async (db) => {
        for (const pipeline of pick(ctx, opts.pipeline)) {
          try {
            if (opts.once) {
              const b = await runBatch(db.pool, pipeline, "once", { onPolicyAdopted: sayAdopted });
              if (b) printBatch(b);
              else console.log(`${pipeline.name}: nothing new in bronze`);
            } else {
              await analyzeIfStale(db.pool, pipeline.name);
              const all = await runUntilCaughtUp((t) => runBatch(db.pool, pipeline, t, { onPolicyAdopted: sayAdopted }), "available-now", printBatch);
              if (all.length === 0) console.log(`${pipeline.name}: nothing new in bronze`);
            }
          } catch (e) {
            // A refused pipeline writes nothing: say why, go on with the others, exit with the worst code.
            if (!(await reportRefusal(e))) throw e;
          }
        }
      });
    });

  program
    .command("status")
    .description("watermark, stream, ledger, windows, sources, last batch, alerts and policy (live, unrecorded or refused) per pipeline")
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .option("--json", "print JSON: an array, one per pipeline, with the checkpoint and the last progress as well")
    .action(async (opts: { pipeline: string; json?: boolean }) => {
      const ctx = await ctxOf();
      const [{ alertViews }, { readOpenHold }, { checkPolicy }, { pipelineStatus }, { pipelineExtras }] = await Promise.all([
        import("../../observe/alerts.js"), import("../../db/sql/lifecycle/holds.js"), import("../../stream/policyGuard.js"), import("../../stream/status.js"),
        import("../../observe/pipelineExtras.js"),
      ]);
      await withDb(ctx, async (db) => {
        const all = await Promise.all(
          pick(ctx, opts.pipeline).map(async (pipeline) => ({ ...(await pipelineStatus(db.pool, pipeline.name)), alerts: await alertViews(db.pool, pipeline), policy: await checkPolicy(db.pool, pipeline), hold: (await readOpenHold(db.pool, pipeline.name)) ?? null, ...(await pipelineExtras(db.pool, pipeline)) })),
        );
        if (opts.json) json(all);
        else console.log(all.map((s) => statusLines(s).join("\n")).join("\n\n"));
      });
    });
}
