/**
 * `rebuild -p P` (src/lifecycle/rebuild.ts): builds a candidate version from
 * the whole ledger under the configured policy and prints its diff against
 * the live version; `rebuild -p P --drop V` removes a version that is not live.
 */
import type { Command } from "commander";
import type { RebuildReport } from "../../lifecycle/rebuild.js";
import type { WindowChange } from "../../db/sql/lifecycle/rebuildDiff.js";
import { json, pickOne, UsageError, versionArg, withDb, type ContextOf } from "../context.js";
import { DEFAULT_LIMIT, limitOption, moreLines } from "../lists.js";
import { keyLabel } from "../print.js";
import { progressBar } from "../progressBar.js";

const window = (w: WindowChange, keyed: boolean) =>
  `${keyed ? `${keyLabel(w.groupKey)} ` : ""}[${w.windowStart}, ${w.windowEnd})`;
const aggregate = (a: NonNullable<WindowChange["before"]>) => `count ${a.count}, sum ${a.sum ?? "null"}`;

/** The rebuild's report as the CLI prints it: the candidate, its checkpoint and reconcile, then the diff (the first `shown` windows and rows, then "… and N more"). */
function rebuildLines(r: RebuildReport, keyed: boolean, shown = DEFAULT_LIMIT): string[] {
  const d = r.diff;
  const count = (c: WindowChange["change"]) => d.windows.filter((w) => w.change === c).length;
  const changedRows = d.reclassified.reduce((a, x) => a + x.rows, 0);
  const rc = r.reconcile;
  const lines = [
    `${r.pipeline}: version ${r.version} (candidate, policy ${r.policyVersion}) ${r.resumed ? "finished" : "built"} beside ${r.liveVersion === null ? "no live version" : `live version ${r.liveVersion}`}: ${r.rowsClassified} rows classified${r.resumed ? " in this run" : ""}`,
    `  checkpoint: offset ${r.checkpoint.lastSeq}, max event time ${r.checkpoint.maxEventTime ?? "none"}, watermark ${r.checkpoint.watermark ?? "none"}; ${r.windows} window${r.windows === 1 ? "" : "s"}`,
    `  reconcile: ${rc.ok ? "ok" : "FAILED"} (${rc.windowsChecked} window${rc.windowsChecked === 1 ? "" : "s"} checked, ${rc.mismatches.length} mismatches; ledger ${rc.ledger.landed} rows = ${rc.ledger.accepted} accepted + ${rc.ledger.quarantined} quarantined)`,
    `  windows against live: ${count("changed")} changed, ${count("removed")} removed, ${count("added")} added`,
    ...moreLines(
      d.windows,
      shown,
      (w) =>
        w.change === "changed"
          ? `    changed  ${window(w, keyed)}  count ${w.before!.count} → ${w.after!.count}, sum ${w.before!.sum ?? "null"} → ${w.after!.sum ?? "null"}`
          : w.change === "removed"
            ? `    removed  ${window(w, keyed)}  was ${aggregate(w.before!)}`
            : `    added    ${window(w, keyed)}  ${aggregate(w.after!)}`,
      { indent: "    ", what: "windows", hint: " (--limit N shows more, --json all, straggler.rebuild_diff)" },
    ),
    `  rows reclassified: ${changedRows}`,
    ...d.reclassified.map((x) => `    ${x.before} → ${x.after}: ${x.rows}`),
    ...moreLines(d.rows, shown, (x) => `      event ${x.eventId} (seq ${x.seq}): ${x.before} → ${x.after}`, {
      indent: "      ",
      what: "rows",
      total: changedRows,
      hint: " (--limit N shows more, up to the first 100 as --json has)",
    }),
  ];
  lines.push(
    rc.ok
      ? `  to serve it: straggler cutover -p ${r.pipeline} --to ${r.version}`
      : `  not servable: its reconcile failed`,
  );
  return lines;
}

export function rebuildCommand(program: Command, ctxOf: ContextOf): void {
  program
    .command("rebuild")
    .description(
      "build a candidate results version from the whole ledger under the configured policy, beside the live one (which keeps serving), and print its diff against live; a killed rebuild continues when run again",
    )
    .requiredOption("-p, --pipeline <name>", "the pipeline")
    .option("--restart", "start over instead of continuing a killed rebuild")
    .option("--page-rows <n>", "rows classified per page and transaction (memory is bounded by it)", "10000")
    .option(
      "--drop <version>",
      "remove a version that is not live (its classification, results and diff) instead of building one",
    )
    .option(...limitOption)
    .option("--json", "print the report as JSON (as POST /pipelines/{p}/rebuild answers)")
    .action(
      async (opts: {
        pipeline: string;
        restart?: boolean;
        pageRows: string;
        drop?: string;
        limit: number;
        json?: boolean;
      }) => {
        const ctx = await ctxOf();
        const [{ dropVersion, rebuild, RebuildRefusedError }, { SourceUnreadableError }] = await Promise.all([
          import("../../lifecycle/rebuild.js"),
          import("../../lifecycle/rebuildClassify.js"),
        ]);
        const pipeline = pickOne(ctx, opts.pipeline);
        const dropping = opts.drop === undefined ? undefined : versionArg("--drop", opts.drop);
        const pageRows = Number(opts.pageRows);
        if (!Number.isSafeInteger(pageRows) || pageRows < 1 || pageRows > 1_000_000)
          throw new UsageError(
            `--page-rows: expected a whole number from 1 to 1000000, got ${JSON.stringify(opts.pageRows)}`,
          );
        await withDb(ctx, async (db) => {
          try {
            if (dropping !== undefined) {
              await dropVersion(db.pool, pipeline.name, dropping);
              if (opts.json) json({ pipeline: pipeline.name, dropped: dropping });
              else console.log(`${pipeline.name}: version ${dropping} removed`);
              return;
            }
            let bar: ReturnType<typeof progressBar> | undefined;
            const report = await rebuild(db.pool, pipeline, {
              restart: opts.restart,
              pageRows,
              onStart: ({ version, resumed, rows }) => {
                if (resumed)
                  console.error(`${pipeline.name}: continuing the rebuild of version ${version} (${rows} rows left)`);
                bar = progressBar(`rebuild ${pipeline.name} v${version}`, {
                  unit: "rows",
                  total: rows,
                  everyMs: ctx.env.STRAGGLER_PROGRESS_EVERY,
                });
              },
              onProgress: (rows) => bar?.update(rows),
            });
            bar?.stop();
            if (opts.json) json(report);
            else console.log(rebuildLines(report, pipeline.fields.groupKey.length > 0, opts.limit).join("\n"));
            if (!report.reconcile.ok) process.exitCode = 1;
          } catch (e) {
            if (!(e instanceof RebuildRefusedError) && !(e instanceof SourceUnreadableError)) throw e;
            console.error(`straggler: ${e.message}`);
            process.exitCode = 1;
          }
        });
      },
    );
}
