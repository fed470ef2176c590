/** `sources`: what became of each source of a pipeline (files, requests, stdin, replay micro-batches). */
import type { Command } from "commander";
import { json, pickOne, UsageError, withDb, type ContextOf } from "../context.js";
import { DEFAULT_LIMIT, moreLines } from "../lists.js";

export function sourcesCommands(program: Command, ctxOf: ContextOf): void {
  program
    .command("sources")
    .description(
      "every source of a pipeline (files, requests, stdin, replay micro-batches) with its state: landed, refused (and why), changed_after_landing, waiting_to_settle",
    )
    .requiredOption("-p, --pipeline <name>", "pipeline")
    .option("--state <state>", "only sources in this state")
    .option("--kind <kind>", "only sources of this kind: file, http, stdin or replay")
    .option(
      "--limit <n>",
      `at most this many (1 to 10000), most recently seen first (default ${DEFAULT_LIMIT}; with --json 100, as GET /pipelines/{p}/sources)`,
    )
    .option("--json", "print JSON: the counts by state and the rows, as GET /pipelines/{p}/sources answers")
    .action(async (opts: { pipeline: string; state?: string; kind?: string; limit?: string; json?: boolean }) => {
      const ctx = await ctxOf();
      const [{ sourcesQuery }, { readSources }, { countSourcesByState }, { countMatchingSources }] = await Promise.all([
        import("../../http/schemas.js"),
        import("../../db/sql/ingest/readSources.js"),
        import("../../db/sql/ingest/countSourcesByState.js"),
        import("../../db/sql/ingest/countSources.js"),
      ]);
      const pipeline = pickOne(ctx, opts.pipeline);
      // The REST route's query schema: the same values accepted, the same messages.
      const parsed = sourcesQuery.safeParse({
        state: opts.state,
        kind: opts.kind,
        limit: opts.limit ?? (opts.json ? undefined : String(DEFAULT_LIMIT)),
      });
      if (!parsed.success)
        throw new UsageError(
          parsed.error.issues
            .map(
              (i) =>
                `--${String(i.path[0])}: ${i.message}, got ${JSON.stringify(opts[i.path[0] as "state" | "kind" | "limit"])}`,
            )
            .join("; "),
        );
      await withDb(ctx, async (db) => {
        const [counts, rows] = await Promise.all([
          countSourcesByState(db.pool, pipeline.name),
          readSources(db.pool, pipeline.name, parsed.data),
        ]);
        if (opts.json) return json({ pipeline: pipeline.name, byState: counts, rows });
        const total =
          rows.length < parsed.data.limit
            ? rows.length
            : await countMatchingSources(db.pool, pipeline.name, parsed.data);
        console.log(
          `${pipeline.name}: ${Object.entries(counts)
            .map(([k, v]) => `${k} ${v}`)
            .join(", ")}`,
        );
        const line = (r: (typeof rows)[number]) =>
          `  ${r.state.padEnd(21)} ${r.kind.padEnd(6)} ${r.source}: ${r.rows} rows (${r.accepted} accepted, ${r.quarantined} quarantined)${r.size_bytes === null ? "" : `, ${r.size_bytes} bytes`}${r.reason ? ` — ${r.reason}` : ""}`;
        for (const l of moreLines(rows, rows.length, line, {
          total,
          hint: " (--limit N up to 10000, most recently seen first)",
        }))
          console.log(l);
      });
    });
}
