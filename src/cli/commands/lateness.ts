/** `lateness`: the lateness distribution, the what-if table over candidate delays and the recommended delay (issue 14, item 1). */
import type { Command } from "commander";
import { json, pickOne, UsageError, withDb, type ContextOf } from "../context.js";
import { limitOption } from "../lists.js";

interface LatenessFlags {
  pipeline: string;
  from?: string;
  to?: string;
  targetDrop?: string;
  delay?: string[];
  byKey?: boolean;
  exact?: boolean;
  limit: number;
  json?: boolean;
}

/** Each query field as its flag, for messages. */
const FLAG: Record<string, string> = {
  from: "--from",
  to: "--to",
  targetDrop: "--target-drop",
  delay: "--delay",
  byKey: "--by-key",
};

/**
 * The flags read with the REST route's query schema (src/http/latenessQuery.ts): the same grammar and messages.
 * (Imported here, when the command runs: `straggler --help` does not load the query schema.)
 * @throws UsageError naming the flag (exit 2)
 */
async function latenessFlags(flags: LatenessFlags) {
  const { latenessOptionsOf, latenessQuery } = await import("../../http/latenessQuery.js");
  const parsed = latenessQuery.safeParse({
    from: flags.from,
    to: flags.to,
    targetDrop: flags.targetDrop,
    delay: flags.delay,
    byKey: flags.byKey ? "true" : undefined,
  });
  if (!parsed.success) {
    throw new UsageError(
      parsed.error.issues.map((i) => `${FLAG[String(i.path[0])] ?? String(i.path[0])}: ${i.message}`).join("; "),
    );
  }
  return latenessOptionsOf(parsed.data);
}

export function latenessCommand(program: Command, ctxOf: ContextOf): void {
  program
    .command("lateness")
    .description(
      "lateness (ingestion time − event time) of the accepted rows, what other delays would have dropped over the recorded batches, and the smallest delay under a drop-share target",
    )
    .requiredOption("-p, --pipeline <name>", "pipeline")
    .option("--from <instant>", "event time from (ISO 8601 with zone)")
    .option("--to <instant>", "event time to, exclusive (ISO 8601 with zone)")
    .option("--target-drop <share>", "drop share the recommendation may reach: 0.1% or 0.001", "0.1%")
    .option(
      "--delay <duration>",
      'a further candidate delay, e.g. "90 minutes"; repeat it, or separate with commas',
      (v: string, all: string[] = []) => [...all, v],
    )
    .option("--by-key", "the distribution per group key too")
    .option(
      "--exact",
      "replay every accepted row in arrival order (the check of the kept histogram; adds time to final and open windows at every delay)",
    )
    .option(...limitOption)
    .option("--json", "print the report as JSON (the REST answer)")
    .action(async (flags: LatenessFlags) => {
      const ctx = await ctxOf();
      const pipeline = pickOne(ctx, flags.pipeline);
      const options = await latenessFlags(flags);
      const [{ latenessAdvice }, { formatLatenessReport }] = await Promise.all([
        import("../../observe/latenessAdvice.js"),
        import("../latenessText.js"),
      ]);
      await withDb(ctx, async (db) => {
        const report = await latenessAdvice(db.pool, pipeline, { ...options, ...(flags.exact ? { exact: true } : {}) });
        if (flags.json) json(report);
        else console.log(formatLatenessReport(report, flags.limit));
      });
    });
}
