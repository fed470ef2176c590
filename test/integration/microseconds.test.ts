/**
 * Microsecond instants end to end: parsed exactly, stored in bronze, assigned
 * to windows in integer µs, moving the watermark by µs, finalizing and
 * dropping by µs, corrected from bronze, and written out by the REST API.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { runCorrection } from "../../src/correction/correct.js";
import { createApp } from "../../src/app.js";
import { landStream } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { replay } from "../../src/replay/replay.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
let server: Server | undefined;
afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

const LANDED_AT = Date.parse("2024-01-15T13:00:00Z");
const RAW = {
  name: "micro",
  source: { format: "jsonl" },
  fields: { eventId: "id", eventTime: "t", value: "v" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "10 minutes" },
};
const p = pipeline(RAW);
const body = (...events: [string, string, number][]) =>
  events.map(([id, t, v]) => JSON.stringify({ id, t, v })).join("\n");

describe("microsecond precision end to end", () => {
  it("keeps µs through bronze, window assignment, the watermark, finalization, the late rule, correction and the API", async () => {
    const { pool } = await getDb();
    const land = async (text: string) => landStream(pool, p, Readable.from([text]), "http", LANDED_AT);
    const windows = async () =>
      (
        await pool.query(
          "SELECT window_start, window_end, event_count, value_sum, status FROM straggler.window_results WHERE pipeline = $1 ORDER BY window_start",
          [p.name],
        )
      ).rows;

    // Batch 0: the last µs of [12:00, 12:10), the first µs of [12:10, 12:20), PostgreSQL's and Python's text forms.
    await land(
      body(
        ["a", "2024-01-15T12:09:59.999999Z", 1],
        ["b", "2024-01-15T12:10:00.000000Z", 10],
        ["c", "2024-01-15 12:00:00.000001+00", 100],
        ["d", "2024-01-15T12:05:00.123456+00:00", 1000],
      ),
    );
    const bronze = await pool.query(
      "SELECT event_id, event_time FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq",
      [p.name],
    );
    expect(bronze.rows).toEqual([
      { event_id: "a", event_time: "2024-01-15T12:09:59.999999Z" },
      { event_id: "b", event_time: "2024-01-15T12:10:00.000Z" },
      { event_id: "c", event_time: "2024-01-15T12:00:00.000001Z" },
      { event_id: "d", event_time: "2024-01-15T12:05:00.123456Z" },
    ]);
    const b0 = (await runBatch(pool, p, "once"))!;
    expect(b0.eventTime).toEqual({
      min: "2024-01-15T12:00:00.000001Z",
      max: "2024-01-15T12:10:00.000Z",
      avg: "2024-01-15T12:06:15.030864Z",
      watermark: null,
    });
    expect(b0.nextWatermark).toBe("2024-01-15T12:00:00.000Z");
    expect(await windows()).toEqual([
      {
        window_start: "2024-01-15T12:00:00.000Z",
        window_end: "2024-01-15T12:10:00.000Z",
        event_count: 3,
        value_sum: "1101",
        status: "open",
      },
      {
        window_start: "2024-01-15T12:10:00.000Z",
        window_end: "2024-01-15T12:20:00.000Z",
        event_count: 1,
        value_sum: "10",
        status: "open",
      },
    ]);

    // Batch 1: the watermark moves to 12:09:59.999999, one µs short of closing [12:00, 12:10).
    await land(body(["e", "2024-01-15T12:19:59.999999Z", 5]));
    const b1 = (await runBatch(pool, p, "once"))!;
    expect(b1.nextWatermark).toBe("2024-01-15T12:09:59.999999Z");
    expect(b1.numRowsFinalized).toBe(0);

    // Batch 2: 12:09:59.999999 is still on time (window end 12:10 > watermark); 12:20:00 moves the watermark to 12:10.
    await land(body(["f", "2024-01-15T12:09:59.999999Z", 20], ["g", "2024-01-15T12:20:00Z", 7]));
    const b2 = (await runBatch(pool, p, "once"))!;
    expect([b2.eventTime.watermark, b2.numRowsDroppedByWatermark, b2.nextWatermark, b2.numRowsFinalized]).toEqual([
      "2024-01-15T12:09:59.999999Z",
      0,
      "2024-01-15T12:10:00.000Z",
      1,
    ]);

    // Batch 3: now the same instant is late (window end 12:10 <= watermark 12:10) and is dropped for correction.
    await land(body(["h", "2024-01-15T12:09:59.999999Z", 40]));
    const b3 = (await runBatch(pool, p, "once"))!;
    expect([b3.numRowsDroppedByWatermark, b3.numLateWindows]).toEqual([1, 1]);
    expect((await windows())[0]).toEqual({
      window_start: "2024-01-15T12:00:00.000Z",
      window_end: "2024-01-15T12:10:00.000Z",
      event_count: 4,
      value_sum: "1121",
      status: "final",
    });

    // The correction recomputes [12:00, 12:10) from bronze, µs instants included: 1 + 100 + 1000 + 20 + 40.
    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect([run.status, run.windowsChanged, run.eventsRecovered]).toEqual(["succeeded", 1, 1]);
    expect((await windows())[0]).toMatchObject({ event_count: 5, value_sum: "1161" });

    // The REST API writes the same instants: 3 fraction digits on whole ms, 6 otherwise.
    const app = createApp({ pool, pipelines: [p], log: createLogger("silent"), token: undefined });
    const base = await new Promise<string>((resolve) => {
      const s = app.listen(0, "127.0.0.1", () => {
        server = s;
        const a = s.address();
        resolve(`http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`);
      });
    });
    const listed = (await (await fetch(`${base}/pipelines`)).json()) as Record<string, unknown>[];
    expect(listed[0]).toMatchObject({
      watermark: "2024-01-15T12:10:00.000Z",
      maxEventTime: "2024-01-15T12:20:00.000Z",
      watermarkLagMs: 600_000,
    });
    const progress = (await (await fetch(`${base}/pipelines/${p.name}/progress?limit=3`)).json()) as Record<
      string,
      unknown
    >[];
    expect(progress.map((r) => r.watermark)).toEqual([
      "2024-01-15T12:10:00.000Z",
      "2024-01-15T12:09:59.999999Z",
      "2024-01-15T12:00:00.000Z",
    ]);
    const ranged = (await (
      await fetch(`${base}/pipelines/${p.name}/windows?from=2024-01-15T12:10:00.000001Z&to=2024-01-15T12:20:00Z`)
    ).json()) as Record<string, unknown>[];
    expect(ranged.map((w) => [w.window_start, w.window_end])).toEqual([
      ["2024-01-15T12:10:00.000Z", "2024-01-15T12:20:00.000Z"],
    ]);
  });

  it("every instant column of the schema holds microseconds, and the read-model views survived the widening", async () => {
    const { pool } = await getDb();
    const narrow = await pool.query(
      `SELECT table_name, column_name, datetime_precision FROM information_schema.columns
        WHERE table_schema = 'straggler' AND data_type = 'timestamp with time zone' AND datetime_precision <> 6`,
    );
    expect(narrow.rows).toEqual([]);
    const views = await pool.query(
      "SELECT table_name FROM information_schema.views WHERE table_schema = 'straggler' ORDER BY 1",
    );
    expect(views.rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining([
        "bronze",
        "correction_audit",
        "correction_history",
        "ledger",
        "quarantine",
        "sources",
        "stream_progress",
        "window_results",
        "windows_awaiting_correction",
      ]),
    );
    const { rows } = await pool.query("SELECT $1::timestamptz AS t", ["2024-01-15T12:09:59.999999Z"]);
    expect(rows).toEqual([{ t: "2024-01-15T12:09:59.999999Z" }]);
  });

  it("replay orders arrivals within one millisecond by their microseconds and windows µs event times exactly", async () => {
    const { pool } = await getDb();
    const rp = pipeline({ ...RAW, name: "micro-replay" });
    const file = path.join(mkdtempSync(path.join(tmpdir(), "straggler-micro-")), "arrivals.jsonl");
    writeFileSync(
      file,
      [
        '{"id":"second","a":"2024-01-15T12:00:00.000002Z","t":"2024-01-15T11:59:59.999999Z","v":1}',
        '{"id":"first","a":"2024-01-15T12:00:00.000001Z","t":"2024-01-15T12:00:00.000000Z","v":2}',
      ].join("\n") + "\n",
    );
    const summary = await replay(pool, rp, { files: [file], arrivalField: "a", batchSpanMs: 3_600_000 });
    expect([summary.rowsStaged, summary.replayBatches]).toEqual([2, 1]);
    const order = await pool.query(
      "SELECT event_id, event_time FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq",
      [rp.name],
    );
    expect(order.rows).toEqual([
      { event_id: "first", event_time: "2024-01-15T12:00:00.000Z" },
      { event_id: "second", event_time: "2024-01-15T11:59:59.999999Z" },
    ]);
    const w = await pool.query(
      "SELECT window_start, value_sum FROM straggler.window_results WHERE pipeline = $1 ORDER BY window_start",
      [rp.name],
    );
    expect(w.rows).toEqual([
      { window_start: "2024-01-15T11:50:00.000Z", value_sum: "1" },
      { window_start: "2024-01-15T12:00:00.000Z", value_sum: "2" },
    ]);
  });
});
