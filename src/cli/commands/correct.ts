/** `correct` (a correction run) and `reconcile` (final windows against a recompute from bronze). */
import type { Command } from "commander";
import { json, pick, rangeOption, withDb, type ContextOf } from "../context.js";
import { limitOption, moreLines } from "../lists.js";
import { correctionLines, keyLabel } from "../print.js";
import type { ReconcileReport } from "../../correction/reconcile.js";
import { reportRefusal, worstExit } from "../refusal.js";

/**
 * A reconcile report for people: the summary line first, then the first `limit` mismatches and
 * the first `limit` windows that could not be recomputed, each list ending with "… and N more".
 */
function reconcileLines(r: ReconcileReport, limit: number): string[] {
  const fmt = (a: ReconcileReport["mismatches"][number]["stored"]) =>
    a ? `count ${a.count} sum ${a.sum} min ${a.min} max ${a.max}` : "missing";
  return [
    `${r.pipeline}: ${r.windowsChecked} final windows checked, ${r.mismatches.length} mismatches` +
      `${r.failedWindows.length > 0 ? `, ${r.failedWindows.length} cannot be recomputed` : ""}; ledger landed ${r.ledger.landed} = accepted ${r.ledger.accepted} + quarantined ${r.ledger.quarantined} ` +
      `(${r.ledger.balanced ? "balanced" : `NOT balanced: landed by source ${r.ledger.landedBySource}`}); backlog ${r.backlogRows} rows`,
    ...moreLines(
      r.mismatches,
      limit,
      (m) =>
        `  ${keyLabel(m.groupKey)} [${m.windowStart}, ${m.windowEnd}) stored ${fmt(m.stored)}, expected ${fmt(m.expected)}`,
      { what: "mismatches" },
    ),
    ...moreLines(
      r.failedWindows,
      limit,
      (f) =>
        `  ${keyLabel(f.groupKey)} [${f.windowStart}, ${f.windowEnd}) cannot be recomputed: ${f.error} (SQLSTATE ${f.sqlstate}); a correction run quarantines its late rows`,
      { what: "windows that cannot be recomputed" },
    ),
  ];
}

export function correctCommands(program: Command, ctxOf: ContextOf): void {
  program
    .command("correct")
    .description(
      "run a correction: windows awaiting correction, plus every final window in [--from, --to) when given; prints the run summary",
    )
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .option("--from <instant>", "range start, ISO 8601 with zone")
    .option("--to <instant>", "range end (exclusive), ISO 8601 with zone")
    .option("--key <key...>", "only these group keys")
    .option("--null-key", "only the null group (with --key: it too)")
    .option(...limitOption)
    .option(
      "--json",
      "print the run summaries as JSON: an array, one per pipeline run, each as POST /pipelines/{p}/recompute answers",
    )
    .action(
      async (opts: {
        pipeline: string;
        from?: string;
        to?: string;
        key?: string[];
        nullKey?: boolean;
        limit: number;
        json?: boolean;
      }) => {
        const ctx = await ctxOf();
        const { runCorrection } = await import("../../correction/correct.js");
        const range = await rangeOption(opts);
        await withDb(ctx, async (db) => {
          const summaries = [];
          for (const pipeline of pick(ctx, opts.pipeline)) {
            const keys = opts.nullKey ? [...(opts.key ?? []), null] : opts.key;
            let s;
            try {
              s = await runCorrection(
                db.pool,
                pipeline,
                { trigger: "cli", range, keys },
                { onPolicyAdopted: (a) => !opts.json && console.log(a.message) },
              );
            } catch (e) {
              // A refused pipeline is not a failed run (none is recorded): say why, go on with the others.
              if (!(await reportRefusal(e))) throw e;
              continue;
            }
            summaries.push(s);
            if (!opts.json) console.log(correctionLines(s, opts.limit).join("\n"));
          }
          if (opts.json) json(summaries);
          if (summaries.some((s) => s.status === "failed")) worstExit(1);
        });
      },
    );

  program
    .command("reconcile")
    .description(
      "compare every final window (in [--from, --to) when given) with a fresh recompute from bronze and check the ledger; exits 1 on any mismatch",
    )
    .option("-p, --pipeline <name>", "pipeline, or 'all'", "all")
    .option("--from <instant>", "range start, ISO 8601 with zone")
    .option("--to <instant>", "range end (exclusive), ISO 8601 with zone")
    .option(...limitOption)
    .option(
      "--json",
      "print the full reports as JSON: an array, one per pipeline, each as GET /pipelines/{p}/reconcile answers (every mismatch)",
    )
    .action(async (opts: { pipeline: string; from?: string; to?: string; limit: number; json?: boolean }) => {
      const ctx = await ctxOf();
      const { reconcile } = await import("../../correction/reconcile.js");
      const range = await rangeOption(opts);
      await withDb(ctx, async (db) => {
        const reports = [];
        for (const pipeline of pick(ctx, opts.pipeline)) {
          let r;
          try {
            r = await reconcile(db.pool, pipeline, range);
          } catch (e) {
            if (!(await reportRefusal(e))) throw e;
            continue;
          }
          reports.push(r);
          if (!opts.json) console.log(reconcileLines(r, opts.limit).join("\n"));
        }
        if (opts.json) json(reports);
        if (reports.some((r) => !r.ok)) worstExit(1);
      });
    });
}
