/**
 * The replay's span worker (src/replay/workerSpans.ts): one file in arrival order read and classified on
 * a worker thread lands exactly what the replay's own thread lands (bronze rows, raw texts, the source
 * records and their SHA-256, micro-batches, windows); a span larger than one piece arrives in pieces; a
 * file out of order stops the worker and is staged; a span the check pass did not count fails the replay.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { replay } from "../../src/replay/replay.js";
import { SPAN_IN_MEMORY } from "../../src/replay/spanSource.js";
import { startSpanWorker } from "../../src/replay/workerSpans.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

const HEADER = "id,event_time,arrived,amount";
/**
 * Arrival order over three spans: `a` twice (the second DUPLICATE, found by the landing's dedupe after its COPY),
 * `v` with no decimal value (INVALID_VALUE), `q` quoted (keeps its raw text), `d` late.
 */
const ROWS = [
  "a,2024-01-15T12:01:00Z,2024-01-15T12:01:30Z,10",
  "b,2024-01-15T12:02:00.000Z,2024-01-15T12:02:30.000Z,20.5",
  "v,2024-01-15T12:03:00Z,2024-01-15T12:03:30Z,lots",
  "c,2024-01-15T13:05:00Z,2024-01-15T13:05:00Z,30",
  '"q",2024-01-15T13:06:00Z,2024-01-15T13:06:00Z,1',
  "a,2024-01-15T12:01:00Z,2024-01-15T13:07:00Z,10",
  "d,2024-01-15T12:03:00Z,2024-01-15T14:10:00Z,40",
  "e,2024-01-15T14:30:00.000Z,2024-01-15T14:31:00.000Z,50",
];

function setup(name: string, rows: string[]) {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-worker-"));
  const file = path.join(dir, "orders.csv");
  writeFileSync(file, [HEADER, ...rows].join("\n") + "\n");
  const p = pipeline({
    name,
    source: { format: "csv" },
    fields: { eventId: "id", eventTime: "event_time", value: "amount" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { maxFutureSkew: null },
  });
  return { p, file };
}

const opts = (file: string, workerFromBytes: number) => ({
  files: [file],
  arrivalField: "arrived",
  batchSpanMs: 3_600_000,
  workerFromBytes,
});

/** Bronze (raw text as stored and as given back), the sources, micro-batches and windows of `name`, without the pipeline's name. */
async function outcome(pool: Pool, name: string) {
  const q = async (sql: string) => (await pool.query(sql, [name])).rows;
  return {
    bronze:
      await q(`SELECT b.event_id, e.raw AS stored, b.raw, b.event_time, b.ingestion_time, b.status, b.reason, b.source_line,
                            split_part(b.source, ':', 3) AS span
                       FROM straggler.bronze b JOIN straggler.bronze_events e USING (pipeline, seq) WHERE b.pipeline = $1 ORDER BY b.seq`),
    sources: await q(`SELECT split_part(source, ':', 3) AS span, sha256, rows, accepted, quarantined, by_reason
                        FROM straggler.landed_sources WHERE pipeline = $1 AND rows > 0 ORDER BY first_seq`),
    batches: await q(`SELECT num_input_rows, watermark, num_rows_dropped_by_watermark, num_rows_updated
                        FROM straggler.batch_progress WHERE pipeline = $1 ORDER BY batch_id`),
    windows: await q(`SELECT group_key, window_start, event_count, value_sum::text FROM straggler.window_results_table
                       WHERE pipeline = $1 ORDER BY group_key, window_start`),
  };
}

describe("replay's span worker", () => {
  it("lands what the replay's own thread lands: rows, raw texts, sources and their SHA-256, batches, windows", async () => {
    const { pool } = await getDb();
    const here = setup("worker-here", ROWS);
    const there = setup("worker-there", ROWS);
    const a = await replay(pool, here.p, opts(here.file, Number.MAX_SAFE_INTEGER));
    const b = await replay(pool, there.p, opts(there.file, 0));
    expect([b.ordered, b.rowsStaged, b.replayBatches, b.streamBatches, b.rowsLanded, b.duplicateRows]).toEqual([
      "file",
      8,
      3,
      3,
      8,
      1,
    ]);
    expect([a.ordered, a.replayBatches, a.rowsLanded, a.duplicateRows]).toEqual(["file", 3, 8, 1]);
    const x = await outcome(pool, "worker-here");
    const y = await outcome(pool, "worker-there");
    expect(y).toEqual(x);
    expect(y.bronze.map((r) => [r.event_id, r.stored === null, r.status, r.reason, r.span])).toEqual([
      ["a", true, "accepted", null, "2024-01-15T12"],
      ["b", true, "accepted", null, "2024-01-15T12"],
      ["v", false, "quarantined", "INVALID_VALUE", "2024-01-15T12"],
      ["c", true, "accepted", null, "2024-01-15T13"],
      ["q", false, "accepted", null, "2024-01-15T13"],
      ["a", true, "quarantined", "DUPLICATE", "2024-01-15T13"],
      ["d", true, "accepted", null, "2024-01-15T14"],
      ["e", true, "accepted", null, "2024-01-15T14"],
    ]);
    // Every raw text given back as received.
    expect(y.bronze.map((r) => r.raw)).toEqual(ROWS);
    const sha = (rows: string[]) =>
      createHash("sha256")
        .update(rows.map((r) => `${r}\n`).join(""))
        .digest("hex");
    expect(y.sources.map((s) => [s.span, s.sha256, s.rows, s.accepted, s.quarantined])).toEqual([
      ["2024-01-15T12", sha(ROWS.slice(0, 3)), 3, 2, 1],
      ["2024-01-15T13", sha(ROWS.slice(3, 6)), 3, 2, 1],
      ["2024-01-15T14", sha(ROWS.slice(6)), 2, 2, 0],
    ]);
    // d (12:03) arrived after 13:06 was seen: dropped by the watermark.
    expect(y.windows.map((w) => [w.event_count, w.value_sum])).toEqual([
      [2, "30.5"],
      [2, "31"],
      [1, "50"],
    ]);
  });

  it(`sends a span of more than ${SPAN_IN_MEMORY} records in pieces, every record landed once and hashed in order`, async () => {
    const { pool } = await getDb();
    // Its first SPAN_IN_MEMORY records, then two pieces of the rest.
    const n = SPAN_IN_MEMORY + 20_003;
    const rows = Array.from({ length: n }, (_, i) => {
      const at = new Date(Date.UTC(2024, 0, 15, 12) + Math.floor(i / 100)).toISOString();
      return `r${i},${at},${at},${i % 7}`;
    });
    const big = setup("worker-pieces", rows);
    const r = await replay(pool, big.p, { ...opts(big.file, 0), batchSpanMs: 86_400_000 });
    expect([r.ordered, r.replayBatches, r.rowsLanded, r.duplicateRows]).toEqual(["file", 1, n, 0]);
    const { rows: src } = await pool.query(
      `SELECT sha256, rows, accepted FROM straggler.landed_sources WHERE pipeline = 'worker-pieces' AND rows > 0`,
    );
    const sha = createHash("sha256");
    for (const row of rows) sha.update(`${row}\n`);
    expect(src).toEqual([{ sha256: sha.digest("hex"), rows: n, accepted: n }]);
    const { rows: sums } = await pool.query(
      `SELECT sum(event_count)::int AS n, sum(value_sum)::text AS s FROM straggler.window_results_table WHERE pipeline = 'worker-pieces'`,
    );
    expect(sums).toEqual([{ n, s: String(rows.reduce((t, _, i) => t + (i % 7), 0)) }]);
  });

  it("stops for a file out of arrival order, which is then sorted in memory", async () => {
    const { pool } = await getDb();
    const back = setup("worker-out-of-order", [ROWS[3]!, ROWS[0]!, ROWS[1]!]);
    const r = await replay(pool, back.p, opts(back.file, 0));
    expect([r.ordered, r.rowsLanded, r.replayBatches]).toEqual(["memory", 3, 2]);
  });

  it("fails a span the check pass did not count as it was read: the file changed between the two readings", async () => {
    const { p, file } = setup("worker-changed", ROWS);
    const naming = { spanMs: 3_600_000, sourcePrefix: "replay:x", started: 0 };
    const start = Date.UTC(2024, 0, 15, 12);
    const worker = startSpanWorker(p, file, "arrived", naming);
    const spans = worker.spans([
      { start, rows: 3 },
      { start: start + 3_600_000, rows: 2 },
    ]);
    try {
      const first = await spans.next();
      expect([first?.source, first?.classified.lines.length, first?.rowsDone]).toEqual([
        "replay:x:2024-01-15T12:00:00.000Z",
        3,
        3,
      ]);
      await expect(spans.next()).rejects.toThrow(
        `${file} changed while it was replayed (the span of replay:x:2024-01-15T13:00:00.000Z holds 3 records, 2 checked); run the replay again`,
      );
    } finally {
      await spans.close();
    }
  });
});
