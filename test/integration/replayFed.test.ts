/**
 * A replay's micro-batches fed from their spans' summaries (src/stream/batchInput.ts) end to end: every span
 * whose landing changed no row streams from its summary (the span whose dedupe quarantined a row reads bronze),
 * and the replay ends with the same micro-batches, windows and late pairs as the same replay read back from
 * bronze (a pipeline that keeps a lateness histogram reads every batch's pairs one by one from bronze).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { replay } from "../../src/replay/replay.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const fed = vi.hoisted(() => ({ batches: new Map<string, number>() }));
vi.mock("../../src/db/sql/stream/feedBatch.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/db/sql/stream/feedBatch.js")>();
  return {
    ...original,
    feedBatch: (...args: Parameters<typeof original.feedBatch>) => {
      fed.batches.set(args[1], (fed.batches.get(args[1]) ?? 0) + 1);
      return original.feedBatch(...args);
    },
  };
});

const getDb = useTestDatabase();

const HEADER = "id,event_time,arrived,k,amount";
/** Four spans of an hour; `l1` and `l2` arrive after their windows closed; `a` again in the third span (DUPLICATE). */
const ROWS = [
  "a,2024-01-15T12:01:00Z,2024-01-15T12:01:30Z,x,10.5",
  "b,2024-01-15T12:02:00Z,2024-01-15T12:02:30Z,y,-20",
  "c,2024-01-15T13:05:00Z,2024-01-15T13:05:00Z,x,30.25",
  "c2,2024-01-15T13:04:00Z,2024-01-15T13:05:00Z,x,35",
  "l1,2024-01-15T11:30:00Z,2024-01-15T13:40:00Z,x,40", // its windows end at 11:35 and 11:40, before the watermark 11:52
  "a,2024-01-15T12:01:00Z,2024-01-15T14:06:00Z,x,10.5",
  "d,2024-01-15T14:30:00Z,2024-01-15T14:31:00Z,y,7.50",
  "l2,2024-01-15T13:01:00Z,2024-01-15T15:10:00Z,y,1",
  "e,2024-01-15T15:20:00Z,2024-01-15T15:21:00Z,x,0",
];

function config(name: string, histogram: boolean) {
  return pipeline({
    name,
    source: { format: "csv" },
    fields: { eventId: "id", eventTime: "event_time", groupKey: ["k"], value: "amount" },
    window: { type: "sliding", size: "10 minutes", slide: "5 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { maxFutureSkew: null },
    lateness: { histogram },
  });
}

/** The micro-batches, windows and late pairs of `name`, without the pipeline's name or times of day. */
async function outcome(pool: Pool, name: string) {
  const q = async (sql: string) => (await pool.query(sql, [name])).rows;
  return {
    batches: await q(`SELECT num_input_rows, num_quarantined_rows, event_time_min, event_time_max, event_time_avg,
                             watermark, next_watermark, num_rows_dropped_by_watermark, num_late_windows, num_rows_updated, num_rows_finalized
                        FROM straggler.batch_progress WHERE pipeline = $1 ORDER BY batch_id`),
    windows:
      await q(`SELECT group_key, window_start, window_end, event_count::int, value_sum::text, value_min::text, value_max::text, status
                        FROM straggler.window_results WHERE pipeline = $1 ORDER BY group_key, window_start`),
    late: await q(
      `SELECT event_id, group_key, window_start FROM straggler.late_events WHERE pipeline = $1 ORDER BY event_id, window_start`,
    ),
  };
}

describe("a replay's micro-batches fed from their spans' summaries", () => {
  it("feeds every span its landing left as classified, and ends as the replay read back from bronze", async () => {
    const { pool } = await getDb();
    const file = path.join(mkdtempSync(path.join(tmpdir(), "straggler-fed-")), "events.csv");
    writeFileSync(file, [HEADER, ...ROWS].join("\n") + "\n");
    const opts = { files: [file], arrivalField: "arrived", batchSpanMs: 3_600_000 };
    await replay(pool, config("fed", false), opts);
    await replay(pool, config("read", true), opts);
    // Four spans; the third (14:00) deduped `a`, so its batch read bronze.
    expect(Object.fromEntries(fed.batches)).toEqual({ fed: 3 });
    const a = await outcome(pool, "fed"),
      b = await outcome(pool, "read");
    expect(a).toEqual(b);
    expect(
      a.batches.map((r) => [r.num_input_rows, r.num_quarantined_rows, Number(r.num_rows_dropped_by_watermark)]),
    ).toEqual([
      [2, 0, 0],
      [3, 0, 2],
      [1, 1, 0],
      [2, 0, 2],
    ]);
    expect(a.late.map((r) => r.event_id)).toEqual(["l1", "l1", "l2", "l2"]);
  });
});
