/**
 * Crash safety with real process kills (SIGKILL of the CLI), DESIGN §5:
 * a run killed between batches, one killed in the middle of a batch, and
 * one killed in the middle of landing a file end with exactly the results
 * of an uninterrupted run.
 *
 * To kill at a known point, the test holds a lock the victim needs at that
 * point, waits until the victim blocks on it (pg_stat_activity), kills it,
 * then releases the lock.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { runCli, startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { backendGone, blockedOn, blockedOnRelation, holdLock } from "../helpers/locks.js";
import { waitFor } from "../helpers/service.js";
import { prng } from "../helpers/prng.js";

const getDb = useTestDatabase();

/** Three JSONL files of 1500 events; event time trails arrival by up to 40 minutes, so some are late. */
function writeDataset(dir: string): void {
  const rand = prng(42);
  let arrival = Date.parse("2026-10-01T12:00:00Z");
  for (let f = 1; f <= 3; f++) {
    const lines: string[] = [];
    for (let i = 0; i < 1500; i++) {
      arrival += Math.floor(rand() * 4000);
      const lateness = rand() < 0.9 ? rand() * 120_000 : rand() * 2_400_000;
      lines.push(
        JSON.stringify({
          id: `e${f}-${i}`,
          t: new Date(arrival - Math.floor(lateness)).toISOString(),
          k: `k${Math.floor(rand() * 5)}`,
          v: (rand() * 100).toFixed(2),
        }),
      );
    }
    writeFileSync(path.join(dir, `part-${f}.jsonl`), lines.join("\n") + "\n");
  }
}

function writeConfig(dir: string, landing: string, names: string[]): string {
  const file = path.join(dir, "pipelines.yaml");
  const one = (name: string) => `
  - name: ${name}
    source: { landingDir: ${JSON.stringify(landing)}, format: jsonl }
    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 5 minutes }
    trigger: { maxRowsPerBatch: 400 }`;
  writeFileSync(file, `pipelines:${names.map(one).join("")}\n`);
  return file;
}

async function snapshot(pool: Pool, pipeline: string) {
  const q = async (sql: string) => (await pool.query(sql, [pipeline])).rows;
  return {
    windows: await q(`SELECT group_key, window_start, window_end, event_count, value_sum, value_min, value_max, status
                        FROM straggler.window_results WHERE pipeline = $1 ORDER BY 1, 2, 3`),
    late: await q(
      `SELECT group_key, window_start, dropped_rows FROM straggler.late_windows WHERE pipeline = $1 ORDER BY 1, 2`,
    ),
    checkpoint: await q(`SELECT watermark, max_event_time FROM straggler.checkpoints WHERE pipeline = $1`),
    dropped: await q(
      `SELECT sum(num_rows_dropped_by_watermark)::int AS n, sum(num_input_rows)::int AS input FROM straggler.batch_progress WHERE pipeline = $1`,
    ),
    ledger: await q(`SELECT landed, accepted, quarantined FROM straggler.ledger WHERE pipeline = $1`),
  };
}

async function batchesCommitted(pool: Pool, pipeline: string): Promise<number> {
  return (await pool.query("SELECT count(*)::int AS n FROM straggler.batch_progress WHERE pipeline = $1", [pipeline]))
    .rows[0].n;
}

describe("restart after SIGKILL", () => {
  it("killed between batches, mid-batch and mid-landing: same results as an uninterrupted run", async () => {
    const { pool, url } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-restart-"));
    const landing = path.join(dir, "landing");
    (await import("node:fs")).mkdirSync(landing);
    writeDataset(landing);
    const config = writeConfig(dir, landing, ["reference", "kill-between", "kill-mid-batch", "kill-mid-landing"]);
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: config };

    // Reference: uninterrupted.
    await runCli(["ingest", "-p", "reference"], env);
    await runCli(["stream", "-p", "reference", "--available-now"], env);
    const expected = await snapshot(pool, "reference");
    expect(expected.ledger).toEqual([{ landed: 4500, accepted: 4500, quarantined: 0 }]);
    expect(expected.dropped[0].input).toBe(4500);
    expect(expected.dropped[0].n).toBeGreaterThan(0); // the dataset does exercise the late rule
    expect(expected.windows.some((w) => w.status === "final")).toBe(true);

    // Killed between batches: after 3 batches, hold the checkpoint row so batch 4 blocks before writing anything.
    await runCli(["ingest", "-p", "kill-between"], env);
    const between = startCli(["stream", "-p", "kill-between", "--available-now"], env);
    await waitFor("3 committed batches", async () =>
      (await batchesCommitted(pool, "kill-between")) >= 3 ? true : undefined,
    );
    const cpLock = await holdLock(pool, "SELECT 1 FROM straggler.checkpoints WHERE pipeline = $1 FOR UPDATE", [
      "kill-between",
    ]);
    await blockedOn(pool, "%straggler.checkpoints%");
    between.child.kill("SIGKILL");
    expect((await between.done).signal).toBe("SIGKILL");
    await cpLock.release();
    const committedBefore = await batchesCommitted(pool, "kill-between");
    await runCli(["stream", "-p", "kill-between", "--available-now"], env);
    expect(await batchesCommitted(pool, "kill-between")).toBe(await batchesCommitted(pool, "reference"));
    expect(committedBefore).toBeGreaterThanOrEqual(3);

    // Killed mid-batch: after 2 batches, block the progress insert — the batch's MERGE, finalization
    // and checkpoint update have run inside its open transaction — and kill it there.
    await runCli(["ingest", "-p", "kill-mid-batch"], env);
    const progressLock = await holdLock(pool, "LOCK TABLE straggler.batch_progress IN EXCLUSIVE MODE");
    const mid = startCli(["stream", "-p", "kill-mid-batch", "--available-now"], env);
    // The batch's last statement (its finalization, its progress row) waits for the table's lock.
    const midPid = await blockedOnRelation(pool, "straggler.batch_progress");
    mid.child.kill("SIGKILL");
    expect((await mid.done).signal).toBe("SIGKILL");
    await progressLock.release();
    // The killed batch's writes rolled back: nothing of it is visible.
    await backendGone(pool, midPid);
    expect(await batchesCommitted(pool, "kill-mid-batch")).toBe(0);
    expect(
      (
        await pool.query(
          "SELECT count(*)::int AS n FROM straggler.window_results_table WHERE pipeline = 'kill-mid-batch'",
        )
      ).rows[0].n,
    ).toBe(0);
    await runCli(["stream", "-p", "kill-mid-batch", "--available-now"], env);

    // Killed mid-landing: the file's rows are in bronze inside the open transaction when it dies.
    const landedLock = await holdLock(pool, "LOCK TABLE straggler.landed_sources IN EXCLUSIVE MODE");
    const landing1 = startCli(["ingest", "-p", "kill-mid-landing"], env);
    const landingPid = await blockedOnRelation(pool, "straggler.landed_sources");
    landing1.child.kill("SIGKILL");
    await landing1.done;
    await landedLock.release();
    await backendGone(pool, landingPid);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = 'kill-mid-landing'"))
        .rows[0].n,
    ).toBe(0);
    const again = await runCli(["ingest", "-p", "kill-mid-landing"], env);
    expect(again).toContain("part-1.jsonl: landed 1500, accepted 1500, quarantined 0");
    expect(await runCli(["ingest", "-p", "kill-mid-landing"], env)).toContain("part-1.jsonl already landed; skipped");
    await runCli(["stream", "-p", "kill-mid-landing", "--available-now"], env);

    for (const name of ["kill-between", "kill-mid-batch", "kill-mid-landing"]) {
      expect({ name, ...(await snapshot(pool, name)) }).toEqual({ name, ...expected });
    }
  }, 180_000);
});
