/** `hold -p P --reason "…"` and `release -p P` (src/lifecycle/hold.ts, README "Incidents: hold"). */
import type { Command } from "commander";
import { json, pickOne, UsageError, withDb, type ContextOf } from "../context.js";

export function holdCommands(program: Command, ctxOf: ContextOf): void {
  program
    .command("hold")
    .description(
      "hold a pipeline's published results: straggler.window_results keeps serving what it serves now (every row held) while landing, the stream and corrections go on",
    )
    .requiredOption("-p, --pipeline <name>", "the pipeline")
    .requiredOption("--reason <text>", "why (shown with the hold)")
    .option(
      "--json",
      "print the hold and how many windows stay published as JSON (as POST /pipelines/{p}/hold answers)",
    )
    .action(async (opts: { pipeline: string; reason: string; json?: boolean }) => {
      const ctx = await ctxOf();
      const { HoldStateError, holdPipeline } = await import("../../lifecycle/hold.js");
      const pipeline = pickOne(ctx, opts.pipeline);
      if (opts.reason.trim() === "")
        throw new UsageError('--reason: expected a reason, e.g. --reason "future-dated events under investigation"');
      await withDb(ctx, async (db) => {
        try {
          const { hold, windows } = await holdPipeline(db.pool, pipeline.name, opts.reason.trim());
          if (opts.json) json({ hold, windows });
          else
            console.log(
              `${pipeline.name}: held since ${hold.heldAt} (hold ${hold.holdId}: ${hold.reason}); straggler.window_results keeps its ${windows} windows until \`straggler release -p ${pipeline.name}\``,
            );
        } catch (e) {
          if (!(e instanceof HoldStateError)) throw e;
          console.error(`straggler: ${e.message}`);
          process.exitCode = 1;
        }
      });
    });

  program
    .command("release")
    .description("release a pipeline's hold: straggler.window_results shows the live results, all at once")
    .requiredOption("-p, --pipeline <name>", "the pipeline")
    .option("--json", "print the released hold as JSON (as POST /pipelines/{p}/release answers)")
    .action(async (opts: { pipeline: string; json?: boolean }) => {
      const ctx = await ctxOf();
      const { HoldStateError, releasePipeline } = await import("../../lifecycle/hold.js");
      const pipeline = pickOne(ctx, opts.pipeline);
      await withDb(ctx, async (db) => {
        try {
          const hold = await releasePipeline(db.pool, pipeline.name);
          if (opts.json) json(hold);
          else
            console.log(
              `${pipeline.name}: released hold ${hold.holdId} (held since ${hold.heldAt}: ${hold.reason}); straggler.window_results shows the live results`,
            );
        } catch (e) {
          if (!(e instanceof HoldStateError)) throw e;
          console.error(`straggler: ${e.message}`);
          process.exitCode = 1;
        }
      });
    });
}
