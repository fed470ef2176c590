/** `cutover -p P --to V` (src/lifecycle/cutover.ts): serve version V; `--to` a retired version rolls back. */
import type { Command } from "commander";
import type { CutoverReport } from "../../lifecycle/cutover.js";
import { json, pickOne, versionArg, withDb, type ContextOf } from "../context.js";

/** The cutover as the CLI prints it. */
function cutoverLines(r: CutoverReport): string[] {
  return [
    `${r.pipeline}: version ${r.version} is live${r.rollback ? " again" : ""}${r.previous === null ? "" : `; version ${r.previous} retired (still in straggler.window_results_by_version)`}`,
    `  ${r.windows} window${r.windows === 1 ? "" : "s"} served; ${r.reclassifiedRows} bronze row${r.reclassifiedRows === 1 ? "" : "s"} rewritten to its classification; ${r.caughtUpRows} row${r.caughtUpRows === 1 ? "" : "s"} caught up since it was built`,
    `  checkpoint: batch ${r.checkpoint.batchId}, offset ${r.checkpoint.lastSeq}, watermark ${r.checkpoint.watermark ?? "none"}`,
    ...(r.previous === null ? [] : [`  to roll back: straggler cutover -p ${r.pipeline} --to ${r.previous}`]),
  ];
}

export function cutoverCommand(program: Command, ctxOf: ContextOf): void {
  program
    .command("cutover")
    .description(
      "serve another results version of a pipeline in one transaction (a complete candidate from `rebuild`, or a retired version: a rollback); it first catches up with rows landed since it was built",
    )
    .requiredOption("-p, --pipeline <name>", "the pipeline")
    .requiredOption("--to <version>", "the version to serve")
    .option("--json", "print the result as JSON (as POST /pipelines/{p}/cutover answers)")
    .action(async (opts: { pipeline: string; to: string; json?: boolean }) => {
      const ctx = await ctxOf();
      const { cutover, CutoverRefusedError } = await import("../../lifecycle/cutover.js");
      const pipeline = pickOne(ctx, opts.pipeline);
      const version = versionArg("--to", opts.to);
      await withDb(ctx, async (db) => {
        try {
          const r = await cutover(db.pool, pipeline, version);
          if (opts.json) json(r);
          else console.log(cutoverLines(r).join("\n"));
        } catch (e) {
          if (!(e instanceof CutoverRefusedError)) throw e;
          console.error(`straggler: ${e.message}`);
          process.exitCode = 1;
        }
      });
    });
}
