import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { landStream } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

const lines = (...rows: object[]) => Readable.from([rows.map((r) => JSON.stringify(r)).join("\n") + "\n"]);

describe("sliding windows", () => {
  it("one event is late for one window and on time for the next", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "sliding",
      source: { landingDir: "unused", format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "sliding", size: "10 minutes", slide: "5 minutes" },
      watermark: { delay: "0 seconds" },
    });
    await landStream(pool, p, lines({ id: "a", t: "2026-10-01T12:10:00Z", v: 1 }), "test");
    const first = await runBatch(pool, p, "once");
    expect(first!.nextWatermark).toBe("2026-10-01T12:10:00.000Z");
    // 12:07 belongs to [12:00,12:10) — end <= watermark 12:10: late — and [12:05,12:15): on time.
    await landStream(pool, p, lines({ id: "b", t: "2026-10-01T12:07:00Z", v: 10 }), "test");
    const second = await runBatch(pool, p, "once");
    expect(second!.numRowsDroppedByWatermark).toBe(1);
    expect(second!.numRowsUpdated).toBe(1);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:05,12:15)=11 open", "[12:10,12:20)=1 open"]);
    const awaiting = await pool.query(
      "SELECT window_start, window_end FROM straggler.windows_awaiting_correction WHERE pipeline = $1",
      [p.name],
    );
    expect(awaiting.rows).toEqual([
      { window_start: "2026-10-01T12:00:00.000Z", window_end: "2026-10-01T12:10:00.000Z" },
    ]);
  });
});
