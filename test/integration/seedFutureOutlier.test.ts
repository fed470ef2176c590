import path from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { runBatch, type BatchProgress } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { futureOutlier } from "../helpers/fixtures.js";
import { hhmm, ledger, windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

async function runAll(pool: Pool, p: PipelineConfig): Promise<BatchProgress[]> {
  const out: BatchProgress[] = [];
  for (const file of ["batch1.csv", "batch2.csv", "batch3.csv"]) {
    await landFile(pool, p, path.join(p.source.landingDir!, file), file);
    out.push((await runBatch(pool, p, "once"))!);
  }
  return out;
}

describe("seed future-outlier", () => {
  it("guarded run: row 4 quarantined as FUTURE_TS, [12:00,12:10) = 5 from ids 1, 2, 3, 5, 6", async () => {
    const { pool } = await getDb();
    const p = futureOutlier(true);
    const batches = await runAll(pool, p);
    expect(batches.map((b) => b.numRowsDroppedByWatermark)).toEqual([0, 0, 0]);
    expect(await windowSummary(pool, p.name, "count")).toEqual(["[12:00,12:10)=5 open"]);
    const q = await pool.query("SELECT event_id, reason FROM straggler.quarantine WHERE pipeline = $1", [p.name]);
    expect(q.rows).toEqual([{ event_id: "4", reason: "FUTURE_TS" }]);
    const ids = await pool.query(
      "SELECT array_agg(event_id ORDER BY event_id) AS ids FROM straggler.bronze WHERE pipeline = $1 AND status = 'accepted' AND event_time < '2026-09-19T12:10:00Z'",
      [p.name],
    );
    expect(ids.rows[0].ids).toEqual(["1", "2", "3", "5", "6"]);
    expect(await ledger(pool, p.name)).toEqual({ landed: 6, accepted: 5, quarantined: 1 });
  });

  it("a skew of exactly the guard is accepted (the boundary is inclusive)", async () => {
    const { pool } = await getDb();
    const base = futureOutlier(true, "future-boundary");
    const p = { ...base, source: { ...base.source, landingDir: "", format: "jsonl" as const } };
    const { Readable } = await import("node:stream");
    const { landStream } = await import("../../src/ingest/landFile.js");
    const body = [
      { RawID: "a", EventTimestampRaw: "2026-09-19T13:10:00Z", IngestionTime: "2026-09-19T12:10:00Z", Payload: 1 },
      { RawID: "b", EventTimestampRaw: "2026-09-19T13:10:00.001Z", IngestionTime: "2026-09-19T12:10:00Z", Payload: 1 },
    ]
      .map((r) => JSON.stringify(r))
      .join("\n");
    const r = await landStream(pool, p, Readable.from([body]), "test");
    expect([r.accepted, r.byReason]).toEqual([1, { FUTURE_TS: 1 }]);
  });

  it("control run: row 4 pushes the watermark to 13:55; ids 5 and 6 are dropped (2 rows counted)", async () => {
    const { pool } = await getDb();
    const p = futureOutlier(false);
    const batches = await runAll(pool, p);
    expect(batches.map((b) => hhmm(b.nextWatermark))).toEqual(["11:57", "13:55", "13:55"]);
    expect(hhmm(batches[2]!.eventTime.watermark)).toBe("13:55");
    expect(batches.map((b) => b.numRowsDroppedByWatermark)).toEqual([0, 0, 2]);
    expect(await windowSummary(pool, p.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
    const awaiting = await pool.query(
      "SELECT window_start, dropped_rows FROM straggler.windows_awaiting_correction WHERE pipeline = $1",
      [p.name],
    );
    expect(awaiting.rows).toEqual([{ window_start: "2026-09-19T12:00:00.000Z", dropped_rows: 2 }]);
    expect(await ledger(pool, p.name)).toEqual({ landed: 6, accepted: 6, quarantined: 0 });
  });
});
