/**
 * Forgetting a pipeline (README "Forget a pipeline"): `straggler drop`
 * removes every row the pipeline owns, in one transaction under its locks;
 * a replay afterwards gives the first run's results; another pipeline's rows
 * are untouched.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { LockNamespace, XACT_LOCK_SQL } from "../../src/db/locks.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { dropPipeline, pipelineRows } from "../../src/lifecycle/drop.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { futureOutlier, seedDir } from "../helpers/fixtures.js";
import { blockedOn, holdLock } from "../helpers/locks.js";
import { ledger, windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

/** The seed's control run, a micro-batch after each file, then a correction run. */
async function firstRun(pool: Pool, p: PipelineConfig): Promise<void> {
  for (const file of ["batch1.csv", "batch2.csv", "batch3.csv"]) {
    await landFile(pool, p, path.join(p.source.landingDir!, file), file);
    await runBatch(pool, p, "once");
  }
  expect((await runCorrection(pool, p, { trigger: "cli" })).status).toBe("succeeded");
}

/** Every row of `pipeline` in every table keyed by pipeline, as JSON text, to compare before and after. */
async function everyRow(pool: Pool, pipeline: string): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of Object.keys((await pipelineRows(pool, pipeline)).tables)) {
    const { rows } = await pool.query(
      `SELECT row_to_json(t)::text AS j FROM straggler.${table} t WHERE pipeline = $1 ORDER BY 1`,
      [pipeline],
    );
    out[table] = rows.map((r: { j: string }) => r.j);
  }
  return out;
}

/** The rows the seed's control run and one correction leave: what drop removes. */
const FIRST_RUN_ROWS = {
  alert_states: 0,
  batch_progress: 3,
  bronze_archived_counts: 0,
  bronze_archives: 0,
  bronze_events: 6,
  bronze_sources: 3,
  checkpoints: 1,
  correction_runs: 1,
  corrections: 1,
  held_window_results: 0,
  landed_sources: 3,
  late_events: 0,
  late_windows: 0,
  log_offsets: 0,
  pipeline_holds: 0,
  pipeline_leases: 0,
  policy_versions: 1,
  session_retractions: 0,
  source_files: 3,
  superseded_events: 0,
  window_failures: 0,
  window_results_table: 2,
  // A CSV source's header line (for a rebuild); the tables of versions beside the live one.
  source_headers: 3,
  event_classifications: 0,
  rebuild_reason_changes: 0,
  rebuild_window_changes: 0,
  rebuilds: 0,
  superseded_versions: 0,
  version_checkpoints: 0,
  version_late_windows: 0,
  version_lateness_coverage: 0,
  version_lateness_histogram: 0,
  version_lateness_windows: 0,
  // The kept lateness histogram (off for this pipeline) and the continuous reconcile's records.
  lateness_histogram: 0,
  lateness_windows: 0,
  reconcile_mismatches: 0,
  reconcile_runs: 0,
  // The ledger's kept counts (every row accepted: one row).
  ledger_counts: 1,
  // The change feed (off for this pipeline).
  window_changes: 0,
  window_changes_pruned: 0,
};

describe("straggler drop", () => {
  it("removes every row of the pipeline; a replay then gives the first run's results; another pipeline's rows are untouched", async () => {
    const { pool } = await getDb();
    const a = futureOutlier(false, "drop-a"),
      b = futureOutlier(false, "drop-b");
    await firstRun(pool, a);
    await firstRun(pool, b);
    const results = await windowSummary(pool, a.name, "count");
    expect(results).toEqual(["[12:00,12:10)=5 corrected", "[14:00,14:10)=1 open"]);
    const other = await everyRow(pool, b.name);

    expect(await pipelineRows(pool, a.name)).toEqual({ pipeline: a.name, tables: FIRST_RUN_ROWS, total: 28 });
    expect(await dropPipeline(pool, a.name)).toEqual({ pipeline: a.name, tables: FIRST_RUN_ROWS, total: 28 });
    expect((await pipelineRows(pool, a.name)).total).toBe(0);
    expect(await ledger(pool, a.name)).toEqual({ landed: 0, accepted: 0, quarantined: 0 });
    expect(await everyRow(pool, b.name)).toEqual(other);

    await firstRun(pool, a);
    expect(await windowSummary(pool, a.name, "count")).toEqual(results);
    expect(await ledger(pool, a.name)).toEqual({ landed: 6, accepted: 6, quarantined: 0 });
    const versions = await pool.query("SELECT version, state FROM straggler.results_versions WHERE pipeline = $1", [
      a.name,
    ]);
    expect(versions.rows).toEqual([{ version: 1, state: "live" }]);
    expect(await everyRow(pool, b.name)).toEqual(other);
  });

  it("waits for a micro-batch or correction in flight (the results lock) and for a landing (the bronze-append lock)", async () => {
    const { pool } = await getDb();
    const p = futureOutlier(false, "drop-locked");
    await landFile(pool, p, path.join(seedDir("future-outlier"), "batch1.csv"), "batch1.csv");
    await runBatch(pool, p, "once");
    for (const namespace of [LockNamespace.results, LockNamespace.bronzeAppend]) {
      await landFile(pool, p, path.join(seedDir("future-outlier"), "batch1.csv"), `again-${namespace}.csv`);
      const lock = await holdLock(pool, XACT_LOCK_SQL, [namespace, p.name]);
      let done = false;
      const drop = dropPipeline(pool, p.name).finally(() => (done = true));
      await blockedOn(pool, "%pg_advisory_xact_lock%");
      expect(done).toBe(false);
      expect((await pipelineRows(pool, p.name)).tables.bronze_events).toBeGreaterThan(0);
      await lock.release();
      expect((await drop).tables.bronze_events).toBeGreaterThan(0);
      expect((await pipelineRows(pool, p.name)).total).toBe(0);
    }
  });

  it("CLI: without --yes it says what would be removed, with counts, removes nothing and exits 1; with --yes it removes them; an unknown name with no rows is exit 2 with a did-you-mean", async () => {
    const { url, pool } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-drop-"));
    const config = path.join(dir, "pipelines.yaml");
    writeFileSync(
      config,
      `pipelines:
  - name: drop-cli
    source: { landingDir: ${JSON.stringify(seedDir("future-outlier"))}, format: csv }
    fields: { eventId: RawID, eventTime: EventTimestampRaw, ingestionTime: IngestionTime, value: Payload }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 5 minutes }
    admission: { maxFutureSkew: null }
`,
    );
    const cli = (...args: string[]) => startCli(["-c", config, ...args], { DATABASE_URL: url }).done;
    expect((await cli("ingest", "-p", "drop-cli", "--stream")).code).toBe(0);
    const asked = await cli("drop", "-p", "drop-cli");
    expect(asked.code).toBe(1);
    expect(asked.stdout).toBe(
      [
        "drop-cli: drop would remove 24 rows:",
        "  straggler.batch_progress        1",
        "  straggler.bronze_events         6",
        "  straggler.bronze_sources        3",
        "  straggler.checkpoints           1",
        "  straggler.landed_sources        3",
        "  straggler.ledger_counts         1",
        "  straggler.policy_versions       1",
        "  straggler.source_files          3",
        "  straggler.source_headers        3",
        "  straggler.window_results_table  2",
        "",
      ].join("\n"),
    );
    expect(asked.stderr).toBe(
      "straggler: nothing removed: run `straggler drop -p drop-cli --yes` to remove them (the raw records in bronze too: land the sources again to rebuild)\n",
    );
    expect((await pipelineRows(pool, "drop-cli")).total).toBe(24);
    // --json: every table with its rows (0 included), without --yes dropped false and exit 1.
    const askedJson = await cli("drop", "-p", "drop-cli", "--json");
    const plan = JSON.parse(askedJson.stdout) as {
      pipeline: string;
      dropped: boolean;
      total: number;
      tables: Record<string, number>;
    };
    expect([
      askedJson.code,
      plan.pipeline,
      plan.dropped,
      plan.total,
      Object.entries(plan.tables).filter(([, n]) => n > 0),
    ]).toEqual([
      1,
      "drop-cli",
      false,
      24,
      [
        ["batch_progress", 1],
        ["bronze_events", 6],
        ["bronze_sources", 3],
        ["checkpoints", 1],
        ["landed_sources", 3],
        ["ledger_counts", 1],
        ["policy_versions", 1],
        ["source_files", 3],
        ["source_headers", 3],
        ["window_results_table", 2],
      ],
    ]);
    expect(plan.tables).toEqual((await pipelineRows(pool, "drop-cli")).tables);
    const dropped = await cli("drop", "-p", "drop-cli", "--yes");
    expect([dropped.code, dropped.stdout.split("\n")[0], dropped.stderr]).toEqual([
      0,
      "drop-cli: dropped 24 rows:",
      "",
    ]);
    expect((await pipelineRows(pool, "drop-cli")).total).toBe(0);
    const again = await cli("drop", "-p", "drop-cli", "--yes");
    expect([again.code, again.stdout]).toEqual([0, "drop-cli: no rows; nothing dropped\n"]);
    // A configured pipeline with no rows, without --yes: exit 1 as always without --yes.
    const emptyAsked = await cli("drop", "-p", "drop-cli");
    expect([emptyAsked.code, emptyAsked.stdout, emptyAsked.stderr]).toEqual([
      1,
      "drop-cli: no rows; nothing to drop\n",
      "",
    ]);
    // A name neither configured nor in the database is a mistake: exit 2, with the closest configured name.
    for (const yes of [[], ["--yes"]]) {
      const typo = await cli("drop", "-p", "drop-clj", ...yes);
      expect([typo.code, typo.stdout, typo.stderr]).toEqual([
        2,
        "",
        "straggler: no pipeline named drop-clj in the pipelines file and no rows in the database (did you mean drop-cli?)\n",
      ]);
    }
    const unknown = await cli("drop", "-p", "nyc-taxi", "--yes");
    expect([unknown.code, unknown.stderr]).toEqual([
      2,
      "straggler: no pipeline named nyc-taxi in the pipelines file and no rows in the database\n",
    ]);
    // A pipeline no longer configured but with rows (one landed file: 2 bronze rows, its source, file, CSV header and kept ledger count): forgetting it is the point.
    const old = futureOutlier(false, "drop-old");
    await landFile(pool, old, path.join(old.source.landingDir!, "batch1.csv"), "batch1.csv");
    const forgotten = await cli("drop", "-p", "drop-old", "--yes");
    expect([forgotten.code, forgotten.stdout.split("\n")[0], forgotten.stderr]).toEqual([
      0,
      "drop-old: dropped 7 rows:",
      "",
    ]);
    expect((await pipelineRows(pool, "drop-old")).total).toBe(0);
    const bad = await cli("drop", "-p", "Bad Name", "--yes");
    expect([bad.code, bad.stderr]).toEqual([
      2,
      "straggler: -p: expected 1-63 characters of a-z, 0-9, '_' or '-', starting with a letter or digit\n",
    ]);
  }, 180_000); // several CLI processes, each starting and migrating
});
