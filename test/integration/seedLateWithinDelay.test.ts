import path from "node:path";
import { describe, expect, it } from "vitest";
import { landFile } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { lateWithinDelay } from "../helpers/fixtures.js";
import { checkpoint, hhmm, windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

describe("seed late-within-delay (each file one micro-batch)", () => {
  it("publishes provisional values, finalizes, and drops the 12:03 event for correction", async () => {
    const { pool } = await getDb();
    const p = lateWithinDelay();
    const step = async (file: string) => {
      const landed = await landFile(pool, p, path.join(p.source.landingDir!, file), file);
      expect(landed.quarantined).toBe(0);
      const progress = await runBatch(pool, p, "once");
      expect(await runBatch(pool, p, "once")).toBeNull(); // one file = one batch
      return progress!;
    };

    const b0 = await step("1.json");
    expect(b0.batchId).toBe(0);
    expect(b0.eventTime.watermark).toBeNull();
    expect(hhmm(b0.nextWatermark)).toBe("12:02");
    expect(hhmm((await checkpoint(pool, p.name)).watermark)).toBe("12:02");
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=15 open", "[12:10,12:20)=7 open"]);

    const b1 = await step("2.json");
    expect(hhmm(b1.eventTime.watermark)).toBe("12:02");
    expect(hhmm(b1.nextWatermark)).toBe("12:15");
    expect(b1.numRowsDroppedByWatermark).toBe(0); // 12:08 is late but within the delay
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:00,12:10)=19 final",
      "[12:10,12:20)=7 open",
      "[12:20,12:30)=3 open",
    ]);

    const b2 = await step("3.json");
    expect(hhmm(b2.eventTime.watermark)).toBe("12:15");
    expect(hhmm(b2.nextWatermark)).toBe("12:31");
    expect(b2.numRowsDroppedByWatermark).toBe(1);
    expect(b2.numLateWindows).toBe(1);
    expect(b2.numRowsFinalized).toBe(2);
    expect(b2.numRowsTotal).toBe(1);
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:00,12:10)=19 final",
      "[12:10,12:20)=7 final",
      "[12:20,12:30)=3 final",
      "[12:40,12:50)=1 open",
    ]);
    const awaiting = await pool.query(
      "SELECT window_start, window_end, dropped_rows FROM straggler.windows_awaiting_correction WHERE pipeline = $1",
      [p.name],
    );
    expect(awaiting.rows).toEqual([
      { window_start: "2026-10-01T12:00:00.000Z", window_end: "2026-10-01T12:10:00.000Z", dropped_rows: 1 },
    ]);
    const lateEvent = await pool.query(
      `SELECT b.raw FROM straggler.late_events l JOIN straggler.bronze_events b ON b.seq = l.seq WHERE l.pipeline = $1`,
      [p.name],
    );
    expect(lateEvent.rows).toEqual([{ raw: '{"event_time": "2026-10-01 12:03:00", "amount": 100}' }]);
  });
});
