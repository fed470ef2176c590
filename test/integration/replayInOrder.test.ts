/**
 * Replay's fast path: one file already in arrival order is read straight from
 * the file (no staging table) and lands exactly what staging would have
 * landed: the same bronze rows in the same order, the same micro-batches, the
 * same windows. A file out of arrival order, a record without an arrival
 * time, or two files are sorted in memory when they fit its budget, else
 * staged, and land the same either way.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { replay } from "../../src/replay/replay.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
/** A memory budget of nothing: every dataset not in arrival order is staged in the temporary table. */
const STAGE = { memoryBudget: { rows: 0, bytes: 0 } };

const HEADER = "id,event_time,arrived,amount";
/** Arrival order; `d` (12:03) arrives in the 14:00 span, after 13:05 was seen (late for 12:00–12:10), `c` and `c2` at the same instant, `a` twice. */
const IN_ORDER = [
  "a,2024-01-15T12:01:00Z,2024-01-15T12:01:30Z,10",
  "b,2024-01-15T12:02:00Z,2024-01-15T12:02:30Z,20",
  "c,2024-01-15T13:05:00Z,2024-01-15T13:05:00Z,30",
  "c2,2024-01-15T13:04:00Z,2024-01-15T13:05:00Z,35",
  "a,2024-01-15T12:01:00Z,2024-01-15T13:06:00Z,10",
  "d,2024-01-15T12:03:00Z,2024-01-15T14:10:00Z,40",
  "e,2024-01-15T14:30:00Z,2024-01-15T14:31:00Z,50",
];

function setup(name: string, files: Record<string, string[]>) {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-inorder-"));
  for (const [file, rows] of Object.entries(files))
    writeFileSync(path.join(dir, file), [HEADER, ...rows].join("\n") + "\n");
  const p = pipeline({
    name,
    source: { format: "csv" },
    fields: { eventId: "id", eventTime: "event_time", value: "amount" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { maxFutureSkew: null },
  });
  return { p, paths: Object.keys(files).map((f) => path.join(dir, f)) };
}

/** Bronze (its raw text as received: the view's), the micro-batches and the windows of `name`, in order, without the pipeline's name or landing times. */
async function outcome(pool: Pool, name: string) {
  const bronze = await pool.query(
    `SELECT event_id, raw, event_time, ingestion_time, status, reason, source_line, split_part(source, ':', 3) AS span
       FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq`,
    [name],
  );
  const batches = await pool.query(
    `SELECT num_input_rows, watermark, next_watermark, num_rows_dropped_by_watermark, num_rows_updated, num_rows_finalized
       FROM straggler.batch_progress WHERE pipeline = $1 ORDER BY batch_id`,
    [name],
  );
  const windows = await pool.query(
    `SELECT group_key, window_start, event_count, value_sum::text, is_final FROM straggler.window_results_table WHERE pipeline = $1 ORDER BY group_key, window_start`,
    [name],
  );
  return { bronze: bronze.rows, batches: batches.rows, windows: windows.rows };
}

describe("replay of one file already in arrival order", () => {
  it("is read from the file, not staged, and lands exactly what the staged replay of the same rows lands", async () => {
    const { pool } = await getDb();
    const direct = setup("in-order-direct", { "orders.csv": IN_ORDER });
    const fast = await replay(pool, direct.p, { files: direct.paths, arrivalField: "arrived", batchSpanMs: 3_600_000 });
    // The same rows in two files (first rows, then the rest) must be staged: the reference.
    const split = setup("in-order-staged", { "orders-1.csv": IN_ORDER.slice(0, 3), "orders-2.csv": IN_ORDER.slice(3) });
    const slow = await replay(pool, split.p, {
      files: split.paths,
      arrivalField: "arrived",
      batchSpanMs: 3_600_000,
      ...STAGE,
    });
    expect([
      fast.staged,
      fast.rowsStaged,
      fast.replayBatches,
      fast.streamBatches,
      fast.rowsLanded,
      fast.duplicateRows,
    ]).toEqual([false, 7, 3, 3, 7, 1]);
    expect([
      slow.staged,
      slow.rowsStaged,
      slow.replayBatches,
      slow.streamBatches,
      slow.rowsLanded,
      slow.duplicateRows,
    ]).toEqual([true, 7, 3, 3, 7, 1]);

    const a = await outcome(pool, "in-order-direct");
    const b = await outcome(pool, "in-order-staged");
    // Staging names each row's file in its made-up span source only through the dataset id: compare the rows themselves.
    expect(a.bronze.map((r) => [r.event_id, r.status, r.reason, r.source_line, r.span])).toEqual([
      ["a", "accepted", null, 2, "2024-01-15T12"],
      ["b", "accepted", null, 3, "2024-01-15T12"],
      ["c", "accepted", null, 4, "2024-01-15T13"],
      ["c2", "accepted", null, 5, "2024-01-15T13"],
      ["a", "quarantined", "DUPLICATE", 6, "2024-01-15T13"],
      ["d", "accepted", null, 7, "2024-01-15T14"],
      ["e", "accepted", null, 8, "2024-01-15T14"],
    ]);
    expect(b.bronze.map((r) => [r.event_id, r.raw, r.event_time, r.ingestion_time, r.status, r.reason])).toEqual(
      a.bronze.map((r) => [r.event_id, r.raw, r.event_time, r.ingestion_time, r.status, r.reason]),
    );
    expect(b.batches).toEqual(a.batches);
    expect(b.windows).toEqual(a.windows);
    // d (12:03) arrived after 13:05 was seen (watermark 12:55): dropped, its window final at 2 events.
    expect(a.batches.map((r) => Number(r.num_rows_dropped_by_watermark))).toEqual([0, 0, 1]);
    expect(a.windows.map((r) => [r.event_count, r.value_sum, r.is_final])).toEqual([
      [2, "30", true],
      [2, "65", true],
      [1, "50", false],
    ]);
  });

  it("a file out of arrival order, or with a record whose arrival time cannot be read, is staged; the staged order is arrival order", async () => {
    const { pool } = await getDb();
    const shuffled = [IN_ORDER[2]!, IN_ORDER[0]!, IN_ORDER[1]!];
    const back = setup("out-of-order", { "orders.csv": shuffled });
    const r = await replay(pool, back.p, {
      files: back.paths,
      arrivalField: "arrived",
      batchSpanMs: 3_600_000,
      ...STAGE,
    });
    expect([r.staged, r.rowsLanded]).toEqual([true, 3]);
    expect((await outcome(pool, "out-of-order")).bronze.map((x) => [x.event_id, x.source_line])).toEqual([
      ["a", 3],
      ["b", 4],
      ["c", 2],
    ]);

    const unreadable = setup("no-arrival", {
      "orders.csv": [IN_ORDER[0]!, "x,2024-01-15T12:04:00Z,not a time,5", IN_ORDER[1]!],
    });
    const u = await replay(pool, unreadable.p, {
      files: unreadable.paths,
      arrivalField: "arrived",
      batchSpanMs: 3_600_000,
      ...STAGE,
    });
    expect([u.staged, u.rowsLanded, u.replayBatches]).toEqual([true, 3, 2]);
    // A record without a readable arrival time lands in the first micro-batch.
    expect((await outcome(pool, "no-arrival")).bronze.map((x) => [x.event_id, x.span])).toEqual([
      ["x", "no-arrival-time"],
      ["a", "2024-01-15T12"],
      ["b", "2024-01-15T12"],
    ]);
  });
});

describe("replay of a dataset not in arrival order, sorted in memory", () => {
  /** Three files out of arrival order: ties at one instant across files (ordered by file name, then line), a NUL in a record, no arrival time, a header refused. */
  const FILES = {
    "b-orders.csv": [IN_ORDER[5]!, IN_ORDER[2]!, "n\u0000ul,2024-01-15T13:10:00Z,2024-01-15T13:10:00Z,7", IN_ORDER[0]!],
    "a-orders.csv": [IN_ORDER[3]!, IN_ORDER[1]!, "x,2024-01-15T12:04:00Z,not a time,5", IN_ORDER[4]!, IN_ORDER[6]!],
  };
  const opts = (paths: string[]) => ({ files: paths, arrivalField: "arrived", batchSpanMs: 3_600_000 });

  it("lands exactly what the staged replay lands: the same bronze rows in the same order, micro-batches and windows", async () => {
    const { pool } = await getDb();
    const mem = setup("sorted-in-memory", FILES);
    const staged = setup("sorted-staged", FILES);
    const a = await replay(pool, mem.p, opts(mem.paths));
    const b = await replay(pool, staged.p, { ...opts(staged.paths), ...STAGE });
    expect([a.staged, a.ordered, a.rowsStaged, a.replayBatches, a.rowsLanded, a.duplicateRows]).toEqual([
      false,
      "memory",
      9,
      4,
      9,
      1,
    ]);
    expect([b.staged, b.ordered, b.rowsStaged, b.replayBatches, b.rowsLanded, b.duplicateRows]).toEqual([
      true,
      "table",
      9,
      4,
      9,
      1,
    ]);
    const x = await outcome(pool, "sorted-in-memory");
    const y = await outcome(pool, "sorted-staged");
    // c2 (a-orders.csv line 2) and c (b-orders.csv line 3) arrive at the same instant: the file named first comes first.
    expect(x.bronze.map((r) => [r.event_id, r.source_line, r.status, r.reason, r.span])).toEqual([
      ["x", 4, "accepted", null, "no-arrival-time"],
      // The CSV reader makes no fields of a record with a NUL: it has no arrival time either.
      ["b-orders.csv:4", 4, "quarantined", "MALFORMED", "no-arrival-time"],
      ["a", 5, "accepted", null, "2024-01-15T12"],
      ["b", 3, "accepted", null, "2024-01-15T12"],
      ["c2", 2, "accepted", null, "2024-01-15T13"],
      ["c", 3, "accepted", null, "2024-01-15T13"],
      ["a", 5, "quarantined", "DUPLICATE", "2024-01-15T13"],
      ["d", 2, "accepted", null, "2024-01-15T14"],
      ["e", 6, "accepted", null, "2024-01-15T14"],
    ]);
    // A record without an arrival time arrives when its replay started: each replay's own instant.
    const row = (r: Record<string, unknown>) => [
      r.event_id,
      r.raw,
      r.event_time,
      r.span === "no-arrival-time" ? "(replay start)" : r.ingestion_time,
      r.status,
      r.reason,
      r.source_line,
    ];
    expect(y.bronze.map(row)).toEqual(x.bronze.map(row));
    expect(y.batches).toEqual(x.batches);
    expect(y.windows).toEqual(x.windows);
  });

  it("a dataset over the memory budget is staged from where it outgrew it, the records held first: the same rows land", async () => {
    const { pool } = await getDb();
    const over = setup("over-budget", FILES);
    const progress: string[] = [];
    const r = await replay(pool, over.p, {
      ...opts(over.paths),
      memoryBudget: { rows: 3, bytes: 1e9 },
      onStaged: (n, how) => progress.push(`${how}:${n}`),
    });
    expect([r.staged, r.ordered, r.rowsStaged, r.rowsLanded, r.duplicateRows]).toEqual([true, "table", 9, 9, 1]);
    expect(progress).toEqual(["table:9"]);
    const ref = setup("over-budget-ref", FILES);
    await replay(pool, ref.p, opts(ref.paths));
    const [x, y] = [await outcome(pool, "over-budget"), await outcome(pool, "over-budget-ref")];
    expect(x.bronze.map((b) => [b.event_id, b.raw, b.source_line, b.status])).toEqual(
      y.bronze.map((b) => [b.event_id, b.raw, b.source_line, b.status]),
    );
    expect(x.windows).toEqual(y.windows);
  });

  it("a file whose header is refused is left out and reported; the other files are sorted and land", async () => {
    const { pool } = await getDb();
    const s = setup("memory-refused", { "a-orders.csv": [IN_ORDER[1]!, IN_ORDER[0]!] });
    const bad = path.join(path.dirname(s.paths[0]!), "b-bad.csv");
    writeFileSync(bad, "id,event_time,arrived,amount,amount\nq,2024-01-15T12:01:00Z,2024-01-15T12:01:30Z,1,1\n");
    const r = await replay(pool, s.p, opts([...s.paths, bad]));
    expect([r.ordered, r.rowsLanded, r.refused.length, r.refused[0]?.file]).toEqual(["memory", 2, 1, bad]);
    expect((await outcome(pool, "memory-refused")).bronze.map((x) => x.event_id)).toEqual(["a", "b"]);
  });
});
