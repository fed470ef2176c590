/**
 * `archive` (bronze partitions past the correction horizon → files, then dropped), `restore --archive <file>`
 * (src/retention/) and `compact` (closed months' indexes rebuilt once: src/db/sql/retention/compactPartitions.ts).
 */
import type { Command } from "commander";
import type { Compaction } from "../../db/sql/retention/compactPartitions.js";
import type { ArchiveRun } from "../../retention/archive.js";
import type { PartitionVerdict } from "../../retention/archivePlan.js";
import { json, withDb, type ContextOf } from "../context.js";
import { limitOption, moreLines } from "../lists.js";
import { worstExit } from "../refusal.js";

/**
 * The lines `archive` prints: a summary line (partitions archived with their rows, partitions kept), then
 * the first `limit` partitions archived (each with its archives' files), then the first `limit` kept with why.
 */
export function archiveLines(run: ArchiveRun, limit: number): string[] {
  if (run.archived.length === 0 && run.kept.length === 0) return ["no closed partitions: nothing to archive"];
  const rows = run.archived.reduce((n, a) => n + a.rows, 0);
  const archived = (a: ArchiveRun["archived"][number]) =>
    [
      `${a.partition}: archived ${a.rows} rows, partition dropped`,
      ...a.archives.flatMap((w) => {
        const m = w.manifest;
        const reasons = Object.entries(m.byReason)
          .map(([r, n]) => `${r} ${n}`)
          .join(", ");
        return [
          `  ${m.pipeline}: ${m.rows} rows (accepted ${m.byStatus.accepted ?? 0}, quarantined ${m.byStatus.quarantined ?? 0}${reasons ? `: ${reasons}` : ""}), event times ${m.eventTime.min ?? "-"} to ${m.eventTime.max ?? "-"}`,
          `    ${w.manifestFile} (sha256 ${m.sha256}, ${m.bytes} bytes)`,
        ];
      }),
    ].join("\n");
  return [
    `${run.archived.length} partition${run.archived.length === 1 ? "" : "s"} archived (${rows} rows), ${run.kept.length} kept`,
    ...moreLines(run.archived, limit, archived, { indent: "", what: "partitions archived" }),
    ...moreLines(run.kept, limit, (k) => `${k.partition}: kept (${k.rows} rows): ${k.reasons.join("; ")}`, {
      indent: "",
      what: "partitions kept",
    }),
  ];
}

/** The lines of `archive --dry-run`: a summary line, then each closed partition (the first `limit`), archivable or why not. */
export function planLines(plan: PartitionVerdict[], limit: number): string[] {
  if (plan.length === 0) return ["no closed partitions: nothing to archive"];
  const would = plan.filter((v) => v.archivable).length;
  return [
    `${plan.length} closed partition${plan.length === 1 ? "" : "s"}: ${would} would be archived, ${plan.length - would} kept`,
    ...moreLines(
      plan,
      limit,
      (v) =>
        `${v.partition}: ${v.rows} rows, ${v.archivable ? (v.restored ? "restored: would be archived again" : "would be archived") : `kept: ${v.reasons.join("; ")}`}`,
      { indent: "", what: "partitions" },
    ),
  ];
}

/** The lines `compact` prints: a summary (partitions, index MB before and after), then each partition. */
export function compactLines(done: Compaction[]): string[] {
  if (done.length === 0) return ["no closed partition left to compact"];
  const mb = (b: number) => `${(b / 1_048_576).toFixed(1)} MB`;
  const sum = (f: (c: Compaction) => number) => done.reduce((n, c) => n + f(c), 0);
  return [
    `${done.length} closed partition${done.length === 1 ? "" : "s"} compacted: indexes ${mb(sum((c) => c.indexBytesBefore))} → ${mb(sum((c) => c.indexBytesAfter))}`,
    ...done.map((c) => `${c.partition}: indexes ${mb(c.indexBytesBefore)} → ${mb(c.indexBytesAfter)} (${c.ms} ms)`),
  ];
}

export function retentionCommands(program: Command, ctxOf: ContextOf): void {
  program
    .command("archive")
    .description(
      "archive bronze partitions wholly past every pipeline's correction horizon (retention in the pipelines file) to compressed files with a SHA-256 and a manifest, then detach and drop them; also archives again a partition restored earlier",
    )
    .option("--dry-run", "only say which partitions would be archived and why the others are kept")
    .option(...limitOption)
    .option(
      "--json",
      "print the outcome as JSON: every partition archived (with its manifests) and kept (with why); with --dry-run every closed partition's verdict",
    )
    .action(async (opts: { dryRun?: boolean; limit: number; json?: boolean }) => {
      const ctx = await ctxOf();
      const [{ runArchive }, { planArchive }, { ensurePartitions }] = await Promise.all([
        import("../../retention/archive.js"),
        import("../../retention/archivePlan.js"),
        import("../../db/sql/retention/partitions.js"),
      ]);
      await withDb(ctx, async (db) => {
        await ensurePartitions(db.pool);
        if (opts.dryRun) {
          const plan = await planArchive(db.pool, ctx.pipelines);
          if (opts.json) json(plan);
          else console.log(planLines(plan, opts.limit).join("\n"));
          return;
        }
        const run = await runArchive(db.pool, ctx.pipelines, { includeRestored: true });
        if (opts.json) json(run);
        else console.log(archiveLines(run, opts.limit).join("\n"));
      });
    });

  program
    .command("restore")
    .description(
      "put an archive's rows back in bronze for a one-off recompute, after checking its SHA-256 against the manifest; `straggler archive` archives them again",
    )
    .requiredOption("--archive <file>", "the archive's manifest (<partition>.<pipeline>.manifest.json) or its .copy.gz")
    .option("--json", "print the outcome as JSON: the partition, the pipeline, the rows restored, the SHA-256 checked")
    .action(async (opts: { archive: string; json?: boolean }) => {
      const ctx = await ctxOf();
      const [{ restoreArchive, RestoreRefusedError }, { listPartitions }] = await Promise.all([
        import("../../retention/restore.js"),
        import("../../db/sql/retention/partitions.js"),
      ]);
      await withDb(ctx, async (db) => {
        try {
          const r = await restoreArchive(db.pool, opts.archive);
          if (opts.json) json(r);
          else {
            const partitions = (await listPartitions(db.pool)).length;
            console.log(
              `${r.partition}: restored ${r.rows} rows of ${r.pipeline} (sha256 ${r.sha256} checked)${r.partitionMade ? ", partition made again" : ""}; bronze has ${partitions} partitions`,
            );
            console.log(
              `  recompute with: straggler correct -p ${r.pipeline} --from … --to …; archive again with: straggler archive`,
            );
          }
        } catch (e) {
          if (!(e instanceof RestoreRefusedError)) throw e;
          console.error(`straggler: ${e.message}`);
          worstExit(1);
        }
      });
    });

  program
    .command("compact")
    .description(
      "rebuild once the indexes of every bronze partition whose month ended over a day ago (REINDEX CONCURRENTLY: landings and reads go on; inserts leave them about half full, a closed month takes no more); run it monthly (cron), or whenever: it rebuilds nothing twice",
    )
    .option("--json", "print every partition compacted with its index bytes before and after and the time it took (ms)")
    .action(async (opts: { json?: boolean }) => {
      const ctx = await ctxOf();
      const { compactClosedPartitions } = await import("../../db/sql/retention/compactPartitions.js");
      await withDb(ctx, async (db) => {
        const done = await compactClosedPartitions(db.pool);
        if (opts.json) json(done);
        else console.log(compactLines(done).join("\n"));
      });
    });
}
