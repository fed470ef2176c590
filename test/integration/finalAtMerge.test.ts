/**
 * A window a micro-batch touches whose end is at or before the watermark after
 * that batch is written final by the batch's MERGE (one row version, not an
 * open row rewritten final by closeBatch); closeBatch finalizes the windows the
 * batch did not touch. `numRowsFinalized` counts both, exactly; a batch that
 * supersedes versions (admission.dedupe: latest) writes its windows open and
 * closeBatch finalizes them, as before.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const dir = mkdtempSync(path.join(tmpdir(), "straggler-final-at-merge-"));

function orders(name: string, dedupe?: "latest") {
  return pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { maxFutureSkew: null, ...(dedupe ? { dedupe } : {}) },
  });
}

async function land(pool: Pool, p: ReturnType<typeof orders>, file: string, events: [string, string, number][]) {
  writeFileSync(path.join(dir, file), events.map(([id, t, v]) => JSON.stringify({ id, t, v })).join("\n") + "\n");
  await landFile(pool, p, path.join(dir, file), file);
}

/** Each window of `name`: start (HH:MM), count, sum, final, the last batch that wrote it. */
async function windows(pool: Pool, name: string) {
  const { rows } = await pool.query(
    `SELECT to_char(window_start AT TIME ZONE 'UTC', 'HH24:MI') AS start, event_count::int AS n, value_sum::text AS sum, is_final, last_batch_id::int AS batch
       FROM straggler.window_results_table WHERE pipeline = $1 ORDER BY window_start`,
    [name],
  );
  return rows.map((r) => [r.start, r.n, r.sum, r.is_final, r.batch]);
}

describe("windows finalized by the MERGE", () => {
  it("a batch spanning 12:01-12:45 writes [12:00,12:10)...[12:20,12:30) final at once (watermark 12:35), [12:30,12:40) and [12:40,12:50) open; the next batch finalizes one it touches and one it does not", async () => {
    const { pool } = await getDb();
    const p = orders("final-at-merge");
    await land(pool, p, "a.jsonl", [
      ["a", "2024-01-15T12:01:00Z", 1],
      ["b", "2024-01-15T12:15:00Z", 2],
      ["c", "2024-01-15T12:25:00Z", 3],
      ["d", "2024-01-15T12:31:00Z", 4],
      ["e", "2024-01-15T12:45:00Z", 5],
    ]);
    const first = await runBatch(pool, p, "once");
    // The watermark is undefined before the first batch: after it, 12:45 - 10 min = 12:35.
    expect([first?.nextWatermark, first?.numRowsUpdated, first?.numRowsFinalized, first?.numRowsTotal]).toEqual([
      "2024-01-15T12:35:00.000Z",
      5,
      3,
      2,
    ]);
    expect(await windows(pool, "final-at-merge")).toEqual([
      ["12:00", 1, "1", true, 0],
      ["12:10", 1, "2", true, 0],
      ["12:20", 1, "3", true, 0],
      ["12:30", 1, "4", false, 0],
      ["12:40", 1, "5", false, 0],
    ]);
    // 12:41 updates [12:40,12:50); 13:05 moves the watermark to 12:55: [12:30,12:40) (untouched) and [12:40,12:50) (touched) become final.
    await land(pool, p, "b.jsonl", [
      ["f", "2024-01-15T12:41:00Z", 6],
      ["g", "2024-01-15T13:05:00Z", 7],
    ]);
    const second = await runBatch(pool, p, "once");
    expect([second?.nextWatermark, second?.numRowsUpdated, second?.numRowsFinalized, second?.numRowsTotal]).toEqual([
      "2024-01-15T12:55:00.000Z",
      2,
      2,
      1,
    ]);
    expect(await windows(pool, "final-at-merge")).toEqual([
      ["12:00", 1, "1", true, 0],
      ["12:10", 1, "2", true, 0],
      ["12:20", 1, "3", true, 0],
      ["12:30", 1, "4", true, 0],
      ["12:40", 2, "11", true, 1],
      ["13:00", 1, "7", false, 1],
    ]);
    // The progress rows say the same.
    const progress = await pool.query(
      "SELECT num_rows_finalized::int AS f, num_rows_total::int AS t FROM straggler.batch_progress WHERE pipeline = $1 ORDER BY batch_id",
      ["final-at-merge"],
    );
    expect(progress.rows.map((r) => [r.f, r.t])).toEqual([
      [3, 2],
      [2, 1],
    ]);
  });

  it("under admission.dedupe latest, a batch that supersedes a version recomputes its window and then finalizes it: the amended value, final", async () => {
    const { pool } = await getDb();
    const p = orders("final-at-merge-latest", "latest");
    await land(pool, p, "a.jsonl", [
      ["a", "2024-01-15T12:01:00Z", 1],
      ["b", "2024-01-15T12:05:00Z", 2],
    ]);
    const first = await runBatch(pool, p, "once");
    expect([first?.nextWatermark, first?.numRowsFinalized, first?.numRowsTotal]).toEqual([
      "2024-01-15T11:55:00.000Z",
      0,
      1,
    ]);
    // a amended to 10; 12:25 moves the watermark to 12:15: [12:00,12:10) final at 10 + 2.
    await land(pool, p, "b.jsonl", [
      ["a", "2024-01-15T12:01:00Z", 10],
      ["c", "2024-01-15T12:25:00Z", 3],
    ]);
    const second = await runBatch(pool, p, "once");
    expect([second?.nextWatermark, second?.numRowsFinalized, second?.numRowsTotal]).toEqual([
      "2024-01-15T12:15:00.000Z",
      1,
      1,
    ]);
    expect(await windows(pool, "final-at-merge-latest")).toEqual([
      ["12:00", 2, "12", true, 1],
      ["12:20", 1, "3", false, 1],
    ]);
  });
});
