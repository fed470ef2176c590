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
import { copyMigrationsFolder, readJournalMigrations, runMigrations, runMigrationsKeeping, runMigrationsWithout, MIGRATIONS_DIR } from "../../src/db/migrate.js";
import type { Pool } from "../../src/db/pool.js";

const journal = readJournalMigrations(MIGRATIONS_DIR);
const m0023 = journal.find((m) => m.tag === "0023_partitioned_bronze")!;
const m0027 = journal.find((m) => m.tag === "0027_pipeline_lease_epochs")!;
const m0028 = journal.find((m) => m.tag === "0028_session_retraction_chains")!;
const m0029 = journal.find((m) => m.tag === "0029_lean_bronze_indexes")!;
const m0030 = journal.find((m) => m.tag === "0030_results_fillfactor")!;
const m0033 = journal.find((m) => m.tag === "0033_reconcile_runs")!;
const m0034 = journal.find((m) => m.tag === "0034_lateness_histogram")!;
const m0037 = journal.find((m) => m.tag === "0037_classification_deltas")!;

const relkind = async (pool: Pool) => (await pool.query("SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass")).rows[0].relkind as string;
const bronzeIndexes = async (pool: Pool) =>
  (await pool.query("SELECT indexname FROM pg_indexes WHERE schemaname = 'straggler' AND tablename = 'bronze_events' ORDER BY indexname")).rows.map((r) => r.indexname as string);
const recorded = async (pool: Pool) => (await pool.query("SELECT hash, created_at::text AS at FROM straggler.__drizzle_migrations ORDER BY id")).rows as { hash: string; at: string }[];
/** A bronze row; `stamped`: with the policy_version column bronze rows had before 0037. */
const insertBronze = (pool: Pool, id: string, at: string, stamped = true) =>
  pool.query(
    `INSERT INTO straggler.bronze_events (pipeline, ${stamped ? "policy_version, " : ""}source, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, reason, landed_at)
     VALUES ('old', ${stamped ? "'v', " : ""}'old.jsonl', 1, $1, '{}', $2, $2, '""', 1, 'accepted', NULL, $2) RETURNING seq::int`,
    [id, at],
  );

/** A logger that keeps each info line's message. */
function captureLog(): { info: (obj: object, msg: string) => void; lines: string[] } {
  const lines: string[] = [];
  return { info: (_obj, msg) => void lines.push(msg), lines };
}

describe("migrations skipped by an earlier migrate", () => {
  it("0023 missing under an applied 0027: applied at the next start (after 0028, and 0029, which finds bronze not yet partitioned and leaves it) with bronze's rows and seq values kept, recorded, logged; then a no-op", async () => {
    await withFreshDatabase(async (pool) => {
      // As the release with 0027 and without 0023 left the database.
      await runMigrationsKeeping(pool, (idx) => idx !== 23 && idx <= 27);
      expect(await relkind(pool)).toBe("r");
      const before = await recorded(pool);
      expect(before.map((r) => r.hash)).toEqual(journal.filter((m) => m !== m0023 && m !== m0028 && m !== m0029 && m !== m0030 && m !== m0033 && m !== m0034 && m !== m0037).map((m) => m.hash));
      expect(before.at(-1)).toEqual({ hash: m0027.hash, at: "1796000027000" });
      const seqs: number[] = [];
      for (const [id, at] of [["a", "2026-05-31T23:59:59.999999Z"], ["b", "2026-06-01T00:00:00Z"], ["c", "2026-06-15T12:00:00Z"]] as const) seqs.push((await insertBronze(pool, id, at)).rows[0].seq);

      const log = captureLog();
      await runMigrations(pool, { log });
      expect(log.lines).toEqual(["applying migration 0023_partitioned_bronze, skipped by an earlier migrate because a later-numbered one was applied first"]);
      expect(await relkind(pool)).toBe("p");
      expect((await pool.query("SELECT count(*)::int AS n FROM pg_partitioned_table WHERE partrelid = 'straggler.bronze_events'::regclass")).rows[0].n).toBe(1);
      const rows = (await pool.query("SELECT seq::int, event_id, tableoid::regclass::text AS t FROM straggler.bronze_events ORDER BY seq")).rows;
      expect(rows).toEqual([
        { seq: seqs[0], event_id: "a", t: "straggler.bronze_events_p202605" },
        { seq: seqs[1], event_id: "b", t: "straggler.bronze_events_p202606" },
        { seq: seqs[2], event_id: "c", t: "straggler.bronze_events_p202606" },
      ]);
      const after = await recorded(pool);
      expect(after).toEqual([...before, { hash: m0028.hash, at: "1796000028000" }, { hash: m0029.hash, at: "1796000029000" }, { hash: m0030.hash, at: "1796000030000" },
        { hash: m0033.hash, at: "1796000033000" }, { hash: m0034.hash, at: "1796000034000" }, { hash: m0037.hash, at: "1796000037000" }, { hash: m0023.hash, at: "1796000023000" }]);
      // 0029 ran on the unpartitioned bronze and changed nothing; 0023 then made its own index set.
      expect(await bronzeIndexes(pool)).toEqual([
        "bronze_events_accepted_event_id_seq", "bronze_events_pipeline_event_time", "bronze_events_pipeline_key_event_time", "bronze_events_pipeline_seq", "bronze_events_seq_landed_at_pk",
      ]);
      // 0027's table is untouched and the sequence goes on after the kept rows.
      expect((await pool.query("SELECT to_regclass('straggler.pipeline_leases')::text AS t")).rows[0].t).toBe("straggler.pipeline_leases");
      // 0037 ran on the unpartitioned bronze too: its policy_version column, copied by 0023, is left nullable and unused.
      expect((await insertBronze(pool, "d", "2026-06-16T00:00:00Z", false)).rows[0].seq).toBe(seqs[2]! + 1);

      // Up to date: nothing applied, nothing logged, nothing recorded.
      const again = captureLog();
      await runMigrations(pool, { log: again });
      expect(again.lines).toEqual([]);
      expect(await recorded(pool)).toEqual(after);

      // A migration recorded by its `when` with another hash was applied from an earlier text of its file: not applied again.
      await pool.query("UPDATE straggler.__drizzle_migrations SET hash = 'an earlier text' WHERE created_at = $1", [m0023.folderMillis]);
      const edited = captureLog();
      await runMigrations(pool, { log: edited });
      expect(edited.lines).toEqual([]);
      expect((await recorded(pool)).length).toBe(after.length);
    });
  });

  it("a skipped migration that fails is rolled back, not recorded, and named in the error; fixed, the next start applies it", async () => {
    await withFreshDatabase(async (pool) => {
      await runMigrationsWithout(pool, [23]);
      const before = await recorded(pool);
      const dir = copyMigrationsFolder(() => true);
      try {
        writeFileSync(path.join(dir, "0023_partitioned_bronze.sql"), "CREATE TABLE straggler.gap_probe (x int);\n--> statement-breakpoint\nTHIS IS NOT SQL;\n");
        const log = captureLog();
        await expect(runMigrations(pool, { log, migrationsFolder: dir })).rejects.toThrow(
          'migration 0023_partitioned_bronze (skipped by an earlier migrate because a later-numbered one was applied first) failed and was rolled back: syntax error at or near "THIS"',
        );
        expect(log.lines).toEqual(["applying migration 0023_partitioned_bronze, skipped by an earlier migrate because a later-numbered one was applied first"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      expect((await pool.query("SELECT to_regclass('straggler.gap_probe') AS t")).rows[0].t).toBeNull();
      expect(await recorded(pool)).toEqual(before);
      expect(await relkind(pool)).toBe("r");
      // The lock was released and the database is as it was: with the real file the next start applies 0023.
      await runMigrations(pool);
      expect(await relkind(pool)).toBe("p");
      expect(await recorded(pool)).toEqual([...before, { hash: m0023.hash, at: "1796000023000" }]);
    });
  });
});
