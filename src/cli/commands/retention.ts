/** `archive` (bronze partitions past the correction horizon → files, then dropped) and `restore --archive <file>` (src/retention/). */
import type { Command } from "commander";
import type { ArchiveRun, PartitionVerdict } from "../../retention/archive.js";
import { json, withDb, type ContextOf } from "../context.js";
import { worstExit } from "../refusal.js";

/** The lines `archive` prints: one per partition archived (and per file), one per partition kept with why. */
export function archiveLines(run: ArchiveRun): string[] {
  const lines: string[] = [];
  for (const a of run.archived) {
    lines.push(`${a.partition}: archived ${a.rows} rows, partition dropped`);
    for (const w of a.archives) {
      const m = w.manifest;
      const reasons = Object.entries(m.byReason).map(([r, n]) => `${r} ${n}`).join(", ");
      lines.push(`  ${m.pipeline}: ${m.rows} rows (accepted ${m.byStatus.accepted ?? 0}, quarantined ${m.byStatus.quarantined ?? 0}${reasons ? `: ${reasons}` : ""}), event times ${m.eventTime.min ?? "-"} to ${m.eventTime.max ?? "-"}`);
      lines.push(`    ${w.manifestFile} (sha256 ${m.sha256}, ${m.bytes} bytes)`);
    }
  }
  for (const k of run.kept) lines.push(`${k.partition}: kept (${k.rows} rows): ${k.reasons.join("; ")}`);
  if (run.archived.length === 0 && run.kept.length === 0) lines.push("no closed partitions: nothing to archive");
  return lines;
}

/** The lines of `archive --dry-run`: each closed partition, archivable or why not. */
function planLines(plan: PartitionVerdict[]): string[] {
  if (plan.length === 0) return ["no closed partitions: nothing to archive"];
  return plan.map((v) => `${v.partition}: ${v.rows} rows, ${v.archivable ? (v.restored ? "restored: would be archived again" : "would be archived") : `kept: ${v.reasons.join("; ")}`}`);
}

export function retentionCommands(program: Command, ctxOf: ContextOf): void {
  program
    .command("archive")
    .description("archive bronze partitions wholly past every pipeline's correction horizon (retention in the pipelines file) to compressed files with a SHA-256 and a manifest, then detach and drop them; also archives again a partition restored earlier")
    .option("--dry-run", "only say which partitions would be archived and why the others are kept")
    .option("--json", "print the outcome as JSON")
    .action(async (opts: { dryRun?: boolean; json?: boolean }) => {
      const ctx = await ctxOf();
      const [{ runArchive, planArchive }, { ensurePartitions }] = await Promise.all([import("../../retention/archive.js"), import("../../retention/partitions.js")]);
      await withDb(ctx, async (db) => {
        await ensurePartitions(db.pool);
        if (opts.dryRun) {
          const plan = await planArchive(db.pool, ctx.pipelines);
          if (opts.json) json(plan);
          else console.log(planLines(plan).join("\n"));
          return;
        }
        const run = await runArchive(db.pool, ctx.pipelines, { includeRestored: true });
        if (opts.json) json(run);
        else console.log(archiveLines(run).join("\n"));
      });
    });

  program
    .command("restore")
    .description("put an archive's rows back in bronze for a one-off recompute, after checking its SHA-256 against the manifest; `straggler archive` archives them again")
    .requiredOption("--archive <file>", "the archive's manifest (<partition>.<pipeline>.manifest.json) or its .copy.gz")
    .option("--json", "print the outcome as JSON")
    .action(async (opts: { archive: string; json?: boolean }) => {
      const ctx = await ctxOf();
      const [{ restoreArchive, RestoreRefusedError }, { listPartitions }] = await Promise.all([import("../../retention/restore.js"), import("../../retention/partitions.js")]);
      await withDb(ctx, async (db) => {
        try {
          const r = await restoreArchive(db.pool, opts.archive);
          if (opts.json) json(r);
          else {
            const partitions = (await listPartitions(db.pool)).length;
            console.log(`${r.partition}: restored ${r.rows} rows of ${r.pipeline} (sha256 ${r.sha256} checked)${r.partitionMade ? ", partition made again" : ""}; bronze has ${partitions} partitions`);
            console.log(`  recompute with: straggler correct -p ${r.pipeline} --from … --to …; archive again with: straggler archive`);
          }
        } catch (e) {
          if (!(e instanceof RestoreRefusedError)) throw e;
          console.error(`straggler: ${e.message}`);
          worstExit(1);
        }
      });
    });
}
