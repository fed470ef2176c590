/**
 * Calendar windows through the real stream, correction job and reconcile:
 * New York days (the example), 23- and 25-hour days, weeks from
 * Monday and from Sunday, months with a leap-year February, 7-day windows
 * sliding by a day, and a late event into a closed day dropped by the stream
 * and restored by the correction.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import type { Pool } from "../../src/db/pool.js";
import { landStream } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { windows } from "../helpers/results.js";

const getDb = useTestDatabase();

/** A JSONL pipeline (`id`, `t` local New York time without a zone, `v`) with the given window, 1-hour delay. */
const calendarPipeline = (name: string, window: Record<string, unknown>): PipelineConfig =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    timestamps: { timeZone: "America/New_York" },
    window,
    watermark: { delay: "1 hour" },
    admission: { maxFutureSkew: null },
  });

let sources = 0;
/** Lands `[id, local time, value]` rows as one source, then runs one micro-batch. */
async function landAndRun(pool: Pool, p: PipelineConfig, rows: [string, string, number][]) {
  const text = rows.map(([id, t, v]) => JSON.stringify({ id, t, v })).join("\n") + "\n";
  await landStream(pool, p, Readable.from([text]), `source-${++sources}`);
  return runBatch(pool, p, "once");
}

/** Stored windows as `start end hours=sum status`, bounds in UTC. */
async function summary(pool: Pool, p: PipelineConfig): Promise<string[]> {
  return (await windows(pool, p.name)).map(
    (w) =>
      `${w.window_start} ${w.window_end} ${(Date.parse(w.window_end) - Date.parse(w.window_start)) / 3_600_000}h=${w.value_sum} ${w.status}`,
  );
}

describe("calendar windows through the stream, the correction and reconcile", () => {
  it("New York days: 07-03 = 1, 07-04 = 110, 01-10 = 1000, 01-11 = 10000; DST days of 25 and 23 hours; a late event restored by the correction", async () => {
    const { pool } = await getDb();
    const p = calendarPipeline("ny-days", { type: "tumbling", size: "1 day", timeZone: "America/New_York" });
    const first = await landAndRun(pool, p, [
      ["a", "2024-07-04 23:30", 100],
      ["b", "2024-01-10 23:30", 1000],
      ["c", "2024-01-11 00:30", 10000],
      ["d", "2023-11-05 12:00", 7], // the autumn change: 25 hours
      ["e", "2024-03-10 12:00", 9], // the spring change: 23 hours
    ]);
    expect(first!.nextWatermark).toBe("2024-07-05T02:30:00.000Z"); // 23:30 EDT = 03:30Z, less 1 hour
    // 07-03 23:30 EDT: its day [07-03 04:00Z, 07-04 04:00Z) ended before the watermark: late.
    // 07-04 00:30 EDT (04:30Z): a day of New York, not of UTC-5, so on time with the 100.
    const second = await landAndRun(pool, p, [
      ["f", "2024-07-03 23:30", 1],
      ["g", "2024-07-04 00:30", 10],
    ]);
    expect([second!.numInputRows, second!.numRowsDroppedByWatermark, second!.numRowsUpdated]).toEqual([2, 1, 1]);
    const awaiting = await pool.query(
      "SELECT window_start, window_end, dropped_rows FROM straggler.windows_awaiting_correction WHERE pipeline = $1",
      [p.name],
    );
    expect(awaiting.rows).toEqual([
      { window_start: "2024-07-03T04:00:00.000Z", window_end: "2024-07-04T04:00:00.000Z", dropped_rows: 1 },
    ]);
    expect(await summary(pool, p)).toEqual([
      "2023-11-05T04:00:00.000Z 2023-11-06T05:00:00.000Z 25h=7 final",
      "2024-01-10T05:00:00.000Z 2024-01-11T05:00:00.000Z 24h=1000 final",
      "2024-01-11T05:00:00.000Z 2024-01-12T05:00:00.000Z 24h=10000 final",
      "2024-03-10T05:00:00.000Z 2024-03-11T04:00:00.000Z 23h=9 final",
      "2024-07-04T04:00:00.000Z 2024-07-05T04:00:00.000Z 24h=110 open",
    ]);

    const before = await reconcile(pool, p);
    expect(before.mismatches).toEqual([
      {
        groupKey: "",
        windowStart: "2024-07-03T04:00:00.000Z",
        windowEnd: "2024-07-04T04:00:00.000Z",
        stored: null,
        expected: { count: 1, sum: "1", min: "1", max: "1" },
      },
    ]);
    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect([run.status, run.windowsExamined, run.windowsChanged, run.eventsRecovered]).toEqual(["succeeded", 1, 1, 1]);
    expect(run.changes.map((c) => [c.windowStart, c.windowEnd, c.before, c.after, c.lateEventIds])).toEqual([
      ["2024-07-03T04:00:00.000Z", "2024-07-04T04:00:00.000Z", null, { count: 1, sum: "1", min: "1", max: "1" }, ["f"]],
    ]);
    expect(await summary(pool, p)).toEqual([
      "2023-11-05T04:00:00.000Z 2023-11-06T05:00:00.000Z 25h=7 final",
      "2024-01-10T05:00:00.000Z 2024-01-11T05:00:00.000Z 24h=1000 final",
      "2024-01-11T05:00:00.000Z 2024-01-12T05:00:00.000Z 24h=10000 final",
      "2024-03-10T05:00:00.000Z 2024-03-11T04:00:00.000Z 23h=9 final",
      "2024-07-03T04:00:00.000Z 2024-07-04T04:00:00.000Z 24h=1 corrected",
      "2024-07-04T04:00:00.000Z 2024-07-05T04:00:00.000Z 24h=110 open",
    ]);
    const after = await reconcile(pool, p);
    expect([after.ok, after.mismatches, after.windowsChecked]).toEqual([true, [], 5]);
    // A range run recomputes every final day overlapping it and changes nothing.
    const ranged = await runCorrection(pool, p, {
      trigger: "api",
      range: { from: "2024-01-11T00:00:00Z", to: "2024-07-04T00:00:00Z" },
    });
    expect([ranged.windowsExamined, ranged.windowsChanged]).toEqual([4, 0]);
  });

  it("weeks start on Monday by default and on a configured Sunday", async () => {
    const { pool } = await getDb();
    const rows: [string, string, number][] = [
      ["sat", "2024-07-06 12:00", 1],
      ["sun", "2024-07-07 12:00", 10],
      ["mon", "2024-07-08 00:00", 100],
    ];
    const monday = calendarPipeline("weeks-monday", { type: "tumbling", size: "1 week", timeZone: "America/New_York" });
    await landAndRun(pool, monday, rows);
    expect(await summary(pool, monday)).toEqual([
      "2024-07-01T04:00:00.000Z 2024-07-08T04:00:00.000Z 168h=11 open",
      "2024-07-08T04:00:00.000Z 2024-07-15T04:00:00.000Z 168h=100 open",
    ]);
    const sunday = calendarPipeline("weeks-sunday", {
      type: "tumbling",
      size: "1 week",
      timeZone: "America/New_York",
      weekStart: "sunday",
    });
    await landAndRun(pool, sunday, rows);
    expect(await summary(pool, sunday)).toEqual([
      "2024-06-30T04:00:00.000Z 2024-07-07T04:00:00.000Z 168h=1 final",
      "2024-07-07T04:00:00.000Z 2024-07-14T04:00:00.000Z 168h=110 open",
    ]);
    // The week of the spring change is an hour short.
    const spring = calendarPipeline("weeks-spring", { type: "tumbling", size: "1 week", timeZone: "America/New_York" });
    await landAndRun(pool, spring, [["x", "2024-03-10 12:00", 5]]);
    expect(await summary(pool, spring)).toEqual(["2024-03-04T05:00:00.000Z 2024-03-11T04:00:00.000Z 167h=5 open"]);
  });

  it("months are calendar months: February 2024 has 29 days, March loses the spring hour", async () => {
    const { pool } = await getDb();
    const p = calendarPipeline("months", { type: "tumbling", size: "1 month", timeZone: "America/New_York" });
    await landAndRun(pool, p, [
      ["leap", "2024-02-29 23:30", 1],
      ["march", "2024-03-01 00:30", 10],
      ["april", "2024-04-15 12:00", 100],
    ]);
    expect(await summary(pool, p)).toEqual([
      "2024-02-01T05:00:00.000Z 2024-03-01T05:00:00.000Z 696h=1 final",
      "2024-03-01T05:00:00.000Z 2024-04-01T04:00:00.000Z 743h=10 final",
      "2024-04-01T04:00:00.000Z 2024-05-01T04:00:00.000Z 720h=100 open",
    ]);
    const report = await reconcile(pool, p);
    expect([report.ok, report.windowsChecked]).toEqual([true, 2]);
  });

  it("7 days sliding by 1 day: an event is in the 7 windows starting on the 7 local midnights up to its own, across the spring change", async () => {
    const { pool } = await getDb();
    const p = calendarPipeline("week-sliding", {
      type: "sliding",
      size: "7 days",
      slide: "1 day",
      timeZone: "America/New_York",
    });
    await landAndRun(pool, p, [["x", "2024-03-12 08:00", 3]]);
    expect(await summary(pool, p)).toEqual([
      "2024-03-06T05:00:00.000Z 2024-03-13T04:00:00.000Z 167h=3 open",
      "2024-03-07T05:00:00.000Z 2024-03-14T04:00:00.000Z 167h=3 open",
      "2024-03-08T05:00:00.000Z 2024-03-15T04:00:00.000Z 167h=3 open",
      "2024-03-09T05:00:00.000Z 2024-03-16T04:00:00.000Z 167h=3 open",
      "2024-03-10T05:00:00.000Z 2024-03-17T04:00:00.000Z 167h=3 open",
      "2024-03-11T04:00:00.000Z 2024-03-18T04:00:00.000Z 168h=3 open",
      "2024-03-12T04:00:00.000Z 2024-03-19T04:00:00.000Z 168h=3 open",
    ]);
    // A later event closes four of them; an event late for those and on time for the rest is dropped only there.
    await landAndRun(pool, p, [["y", "2024-03-16 01:00", 20]]);
    const late = await landAndRun(pool, p, [["z", "2024-03-11 12:00", 100]]);
    expect([late!.numRowsDroppedByWatermark, late!.numRowsUpdated]).toEqual([5, 2]);
    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect([run.windowsChanged, run.eventsRecovered]).toEqual([5, 5]); // late (event, window) pairs recovered
    const report = await reconcile(pool, p);
    expect([report.ok, report.mismatches]).toEqual([true, []]);
    expect((await summary(pool, p)).slice(0, 5)).toEqual([
      "2024-03-05T05:00:00.000Z 2024-03-12T04:00:00.000Z 167h=100 corrected",
      "2024-03-06T05:00:00.000Z 2024-03-13T04:00:00.000Z 167h=103 corrected",
      "2024-03-07T05:00:00.000Z 2024-03-14T04:00:00.000Z 167h=103 corrected",
      "2024-03-08T05:00:00.000Z 2024-03-15T04:00:00.000Z 167h=103 corrected",
      "2024-03-09T05:00:00.000Z 2024-03-16T04:00:00.000Z 167h=103 corrected",
    ]);
  });
});
