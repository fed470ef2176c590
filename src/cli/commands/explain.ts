/** `explain -p P --window START [--key K | --null-key] [--json]`: every revision of one window (src/observe/explain.ts). */
import type { Command } from "commander";
import { json, pickOne, UsageError, withDb, type ContextOf } from "../context.js";

export function explainCommand(program: Command, ctxOf: ContextOf): void {
  program
    .command("explain")
    .description(
      "explain one window: every revision in order (value before and after, status, cause: micro-batch, correction run, cutover, hold and release), the late events each correction recovered and the quarantined rows that would have fallen in it",
    )
    .requiredOption("-p, --pipeline <name>", "the pipeline")
    .requiredOption(
      "--window <start>",
      "the window's start, ISO 8601 with a zone (sessions: an instant inside the session)",
    )
    .option("--key <key>", "the group key (a composite key as its JSON array text)")
    .option("--null-key", "the null group")
    .option("--json", "print the history as JSON (the REST answer)")
    .action(async (opts: { pipeline: string; window: string; key?: string; nullKey?: boolean; json?: boolean }) => {
      const ctx = await ctxOf();
      const pipeline = pickOne(ctx, opts.pipeline);
      if (opts.nullKey && opts.key !== undefined) throw new UsageError("give --key or --null-key, not both");
      const [{ explainWindow, ExplainRequestError }, { formatExplanation }] = await Promise.all([
        import("../../observe/explain.js"),
        import("../../observe/explainText.js"),
      ]);
      await withDb(ctx, async (db) => {
        try {
          const x = await explainWindow(db.pool, pipeline, opts.window, opts.nullKey ? null : opts.key);
          if (opts.json) json(x);
          else console.log(formatExplanation(x));
        } catch (e) {
          if (e instanceof ExplainRequestError)
            throw new UsageError(e.message.replace(/^start:/, "--window:").replace(/^key:/, "--key:"));
          throw e;
        }
      });
    });
}
