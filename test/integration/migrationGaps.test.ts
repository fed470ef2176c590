/**
 * A migration skipped by an earlier migrate (src/db/migrate.ts, README "Migrations"): a
 * database migrated while 0027 was released and 0023 not yet never got 0023 from drizzle's
 * migrate (it applies only migrations later than the newest applied one); runMigrations
 * applies it, records it, and is a no-op after.
 */
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { withFreshDatabase } from "../helpers/db.js";
import {
  copyMigrationsFolder,
  readJournalMigrations,
  runMigrations,
  runMigrationsKeeping,
  MIGRATIONS_DIR,
} from "../../src/db/migrate.js";
import type { Pool } from "../../src/db/pool.js";

const journal = readJournalMigrations(MIGRATIONS_DIR);
const m0023 = journal.find((m) => m.tag === "0023_partitioned_bronze")!;
const m0027 = journal.find((m) => m.tag === "0027_pipeline_lease_epochs")!;
const m0028 = journal.find((m) => m.tag === "0028_session_retraction_chains")!;
const m0029 = journal.find((m) => m.tag === "0029_lean_bronze_indexes")!;
const m0030 = journal.find((m) => m.tag === "0030_results_fillfactor")!;
const m0033 = journal.find((m) => m.tag === "0033_reconcile_runs")!;
const m0034 = journal.find((m) => m.tag === "0034_lateness_histogram")!;
const m0035 = journal.find((m) => m.tag === "0035_read_model_docs")!;
const m0038 = journal.find((m) => m.tag === "0038_bronze_pipeline_seq_key")!;
const m0039 = journal.find((m) => m.tag === "0039_bronze_raw_elided")!;
const m0040 = journal.find((m) => m.tag === "0040_window_changes")!;
const m0041 = journal.find((m) => m.tag === "0041_classification_deltas")!;
const m0042 = journal.find((m) => m.tag === "0042_bronze_default_input")!;
const m0043 = journal.find((m) => m.tag === "0043_ledger_counts")!;
const m0044 = journal.find((m) => m.tag === "0044_lateness_histogram_versions")!;
const m0045 = journal.find((m) => m.tag === "0045_bronze_raw_instant")!;
const m0046 = journal.find((m) => m.tag === "0046_bronze_compactions")!;
const m0047 = journal.find((m) => m.tag === "0047_bronze_raw_at_event_time")!;
const m0048 = journal.find((m) => m.tag === "0048_bronze_index_fill")!;
const m0049 = journal.find((m) => m.tag === "0049_late_event_ids")!;
const m0050 = journal.find((m) => m.tag === "0050_bronze_narrow_keys")!;
const m0051 = journal.find((m) => m.tag === "0051_results_keyed_by_version")!;
const m0052 = journal.find((m) => m.tag === "0052_bronze_raw_plpgsql")!;
const m0053 = journal.find((m) => m.tag === "0053_bronze_ingestion_time_of_source")!;
/** The migrations after 0027 up to the release that still missed 0023 (0034), then the ones after it. */
const after27 = [m0028, m0029, m0030, m0033, m0034];
const later = [
  m0035,
  m0038,
  m0039,
  m0040,
  m0041,
  m0042,
  m0043,
  m0044,
  m0045,
  m0046,
  m0047,
  m0048,
  m0049,
  m0050,
  m0051,
  m0052,
  m0053,
];

const relkind = async (pool: Pool) =>
  (await pool.query("SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass")).rows[0]
    .relkind as string;
const bronzeIndexes = async (pool: Pool) =>
  (
    await pool.query(
      "SELECT indexname FROM pg_indexes WHERE schemaname = 'straggler' AND tablename = 'bronze_events' ORDER BY indexname",
    )
  ).rows.map((r) => r.indexname as string);
const recorded = async (pool: Pool) =>
  (await pool.query("SELECT hash, created_at::text AS at FROM straggler.__drizzle_migrations ORDER BY id")).rows as {
    hash: string;
    at: string;
  }[];
/** A bronze row of pipeline `old`, written by hand: as bronze was before 0039 (a policy_version column, its source by name), or now (its source by id). */
const insertBronze = (pool: Pool, id: string, at: string, shape: "before 0039" | "now" = "before 0039") =>
  pool.query(
    `INSERT INTO straggler.bronze_events (pipeline, ${shape === "now" ? "source_id" : "policy_version, source"}, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, reason, landed_at)
     VALUES ('old', ${shape === "now" ? "straggler.bronze_source_id('old', 'old.jsonl')" : "'v', 'old.jsonl'"}, 1, $1, '{}', $2, $2, '""', 1, 'accepted', NULL, $2) RETURNING seq::int`,
    [id, at],
  );

/** A logger that keeps each info line's message. */
function captureLog(): { info: (obj: object, msg: string) => void; lines: string[] } {
  const lines: string[] = [];
  return { info: (_obj, msg) => void lines.push(msg), lines };
}

describe("migrations skipped by an earlier migrate", () => {
  it("0023 missing under an applied 0027: applied at the next start before the later ones, so that each runs after the ones numbered before it, with bronze's rows and seq values kept, recorded, logged; then a no-op", async () => {
    await withFreshDatabase(async (pool) => {
      // As the release with 0027 and without 0023 left the database.
      await runMigrationsKeeping(pool, (idx) => idx !== 23 && idx <= 27);
      expect(await relkind(pool)).toBe("r");
      const before = await recorded(pool);
      expect(before.map((r) => r.hash)).toEqual(
        journal.filter((m) => m !== m0023 && !after27.includes(m) && !later.includes(m)).map((m) => m.hash),
      );
      expect(before.at(-1)).toEqual({ hash: m0027.hash, at: "1796000027000" });
      const seqs: number[] = [];
      for (const [id, at] of [
        ["a", "2026-05-31T23:59:59.999999Z"],
        ["b", "2026-06-01T00:00:00Z"],
        ["c", "2026-06-15T12:00:00Z"],
      ] as const)
        seqs.push((await insertBronze(pool, id, at)).rows[0].seq);

      const log = captureLog();
      await runMigrations(pool, { log });
      expect(log.lines).toEqual([
        "applying migration 0023_partitioned_bronze, skipped by an earlier migrate because a later-numbered one was applied first",
      ]);
      expect(await relkind(pool)).toBe("p");
      expect(
        (
          await pool.query(
            "SELECT count(*)::int AS n FROM pg_partitioned_table WHERE partrelid = 'straggler.bronze_events'::regclass",
          )
        ).rows[0].n,
      ).toBe(1);
      const rows = (
        await pool.query(
          "SELECT seq::int, event_id, tableoid::regclass::text AS t FROM straggler.bronze_events ORDER BY seq",
        )
      ).rows;
      expect(rows).toEqual([
        { seq: seqs[0], event_id: "a", t: "straggler.bronze_events_p202605" },
        { seq: seqs[1], event_id: "b", t: "straggler.bronze_events_p202606" },
        { seq: seqs[2], event_id: "c", t: "straggler.bronze_events_p202606" },
      ]);
      const after = await recorded(pool);
      expect(after).toEqual([
        ...before,
        ...[m0023, ...after27, ...later].map((m) => ({ hash: m.hash, at: String(m.folderMillis) })),
      ]);
      // 0029, 0038 and 0050 ran on the partitioned bronze 0023 made: the lean index set.
      expect(await bronzeIndexes(pool)).toEqual([
        "bronze_events_accepted_event_key",
        "bronze_events_event_time_brin",
        "bronze_events_key_event_time",
        "bronze_events_pipeline_seq",
      ]);
      // 0027's table is untouched and the sequence goes on after the kept rows.
      expect((await pool.query("SELECT to_regclass('straggler.pipeline_leases')::text AS t")).rows[0].t).toBe(
        "straggler.pipeline_leases",
      );
      expect((await insertBronze(pool, "d", "2026-06-16T00:00:00Z", "now")).rows[0].seq).toBe(seqs[2]! + 1);
      expect((await pool.query("SELECT source FROM straggler.bronze WHERE event_id = 'a'")).rows).toEqual([
        { source: "old.jsonl" },
      ]);

      // Up to date: nothing applied, nothing logged, nothing recorded.
      const again = captureLog();
      await runMigrations(pool, { log: again });
      expect(again.lines).toEqual([]);
      expect(await recorded(pool)).toEqual(after);

      // A migration recorded by its `when` with another hash was applied from an earlier text of its file: not applied again.
      await pool.query("UPDATE straggler.__drizzle_migrations SET hash = 'an earlier text' WHERE created_at = $1", [
        m0023.folderMillis,
      ]);
      const edited = captureLog();
      await runMigrations(pool, { log: edited });
      expect(edited.lines).toEqual([]);
      expect((await recorded(pool)).length).toBe(after.length);
    });
  });

  it("a skipped migration that fails is rolled back, not recorded, and named in the error; fixed, the next start applies it", async () => {
    await withFreshDatabase(async (pool) => {
      // As the release with 0034 and without 0023 left the database.
      await runMigrationsKeeping(pool, (idx) => idx !== 23 && idx <= 34);
      const before = await recorded(pool);
      const dir = copyMigrationsFolder(() => true);
      try {
        writeFileSync(
          path.join(dir, "0023_partitioned_bronze.sql"),
          "CREATE TABLE straggler.gap_probe (x int);\n--> statement-breakpoint\nTHIS IS NOT SQL;\n",
        );
        const log = captureLog();
        await expect(runMigrations(pool, { log, migrationsFolder: dir })).rejects.toThrow(
          'migration 0023_partitioned_bronze (skipped by an earlier migrate because a later-numbered one was applied first) failed and was rolled back: syntax error at or near "THIS"',
        );
        expect(log.lines).toEqual([
          "applying migration 0023_partitioned_bronze, skipped by an earlier migrate because a later-numbered one was applied first",
        ]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      expect((await pool.query("SELECT to_regclass('straggler.gap_probe') AS t")).rows[0].t).toBeNull();
      expect(await recorded(pool)).toEqual(before);
      expect(await relkind(pool)).toBe("r");
      // The lock was released and the database is as it was: with the real file the next start applies 0023.
      await runMigrations(pool);
      expect(await relkind(pool)).toBe("p");
      expect(await recorded(pool)).toEqual([
        ...before,
        ...[m0023, ...later].map((m) => ({ hash: m.hash, at: String(m.folderMillis) })),
      ]);
    });
  });
});
