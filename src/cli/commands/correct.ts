/** `correct` (a correction run) and `reconcile` (final windows against a recompute from bronze). */
import type { Command } from "commander";
import { runCorrection } from "../../correction/correct.js";
import { reconcile } from "../../correction/reconcile.js";
import { json, pick, rangeOption, withDb, type ContextOf } from "../context.js";
import { keyLabel } from "../print.js";

export function correctCommands(program: Command, ctxOf: ContextOf): void {
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
        for (const pipeline of pick(ctx, opts.pipeline)) {
          const keys = opts.nullKey ? [...(opts.key ?? []), null] : opts.key;
          const s = await runCorrection(db.pool, pipeline, { trigger: "cli", range, keys });
          failed ||= s.status === "failed";
          console.log(
            `${pipeline.name}: correction run ${s.runId} ${s.status}: ${s.windowsExamined} windows examined, ${s.windowsChanged} changed, ` +
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
        for (const pipeline of pick(ctx, opts.pipeline)) {
          const r = await reconcile(db.pool, pipeline, range);
          bad ||= !r.ok;
          if (opts.json) {
            json(r);
            continue;
          }
          console.log(
            `${pipeline.name}: ${r.windowsChecked} final windows checked, ${r.mismatches.length} mismatches; ledger landed ${r.ledger.landed} = accepted ${r.ledger.accepted} + quarantined ${r.ledger.quarantined} ` +
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
}
