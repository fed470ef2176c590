/** The command `straggler drop -p P --yes`: forget a pipeline (src/lifecycle/drop.ts); without `--yes` it says what would be removed and removes nothing. */
import type { Command } from "commander";
import { closest, distance } from "fastest-levenshtein";
import type { PipelineRows } from "../../lifecycle/drop.js";
import { json, UsageError, withDb, type ContextOf } from "../context.js";

/** One line per table with rows (`  bronze_events  6`), in table order. */
function rowLines(r: PipelineRows): string[] {
  const rows = Object.entries(r.tables).filter(([, n]) => n > 0);
  const width = Math.max(0, ...rows.map(([t]) => t.length));
  return rows.map(([t, n]) => `  straggler.${t.padEnd(width)}  ${n}`);
}

/**
 * " (did you mean X?)" naming the configured pipeline closest to `name` (Levenshtein distance at
 * most a third of the longer name, at least 2), or "" when none is that close.
 */
function didYouMean(name: string, configured: string[]): string {
  if (configured.length === 0) return "";
  const best = closest(name, configured);
  return distance(name, best) <= Math.max(2, Math.floor(Math.max(name.length, best.length) / 3))
    ? ` (did you mean ${best}?)`
    : "";
}

export function dropCommand(program: Command, ctxOf: ContextOf): void {
  program
    .command("drop")
    .description(
      "forget a pipeline: remove its bronze, results, checkpoint, versions, audit, sources and alert states in one transaction (needs --yes; without it exits 1); a name neither configured nor with rows is exit 2",
    )
    .requiredOption("-p, --pipeline <name>", "the pipeline (it need not be configured any more)")
    .option("--yes", "remove them; without it, only say what would be removed")
    .option(
      "--json",
      'print JSON: { "pipeline", "dropped": true | false (without --yes), "total", "tables": { <table>: rows } }',
    )
    .action(async (opts: { pipeline: string; yes?: boolean; json?: boolean }) => {
      const ctx = await ctxOf();
      const [{ pipelineName }, { dropPipeline, pipelineRows }] = await Promise.all([
        import("../../config/settingSchemas.js"),
        import("../../lifecycle/drop.js"),
      ]);
      const name = pipelineName.safeParse(opts.pipeline);
      if (!name.success) throw new UsageError(`-p: ${name.error.issues[0]!.message}`);
      const configured = ctx.pipelines.some((p) => p.name === opts.pipeline);
      await withDb(ctx, async (db) => {
        const rows = await pipelineRows(db.pool, opts.pipeline);
        // A name neither configured nor in the database is a mistyped name, not "nothing to drop".
        if (!configured && rows.total === 0) {
          throw new UsageError(
            `no pipeline named ${opts.pipeline} in the pipelines file and no rows in the database${didYouMean(
              opts.pipeline,
              ctx.pipelines.map((p) => p.name),
            )}`,
          );
        }
        if (!opts.yes) {
          const r = rows;
          process.exitCode = 1;
          if (opts.json) json({ pipeline: opts.pipeline, dropped: false, total: r.total, tables: r.tables });
          if (r.total === 0) {
            if (!opts.json) console.log(`${opts.pipeline}: no rows; nothing to drop`);
            return;
          }
          if (!opts.json)
            console.log([`${opts.pipeline}: drop would remove ${r.total} rows:`, ...rowLines(r)].join("\n"));
          console.error(
            `straggler: nothing removed: run \`straggler drop -p ${opts.pipeline} --yes\` to remove them (the raw records in bronze too: land the sources again to rebuild)`,
          );
          return;
        }
        const r = await dropPipeline(db.pool, opts.pipeline);
        if (opts.json) json({ pipeline: opts.pipeline, dropped: true, total: r.total, tables: r.tables });
        else
          console.log(
            r.total === 0
              ? `${opts.pipeline}: no rows; nothing dropped`
              : [`${opts.pipeline}: dropped ${r.total} rows:`, ...rowLines(r)].join("\n"),
          );
      });
    });
}
