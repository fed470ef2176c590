/**
 * The session's pairs table as a micro-batch's read fills it (src/db/sql/stream/readBatch.ts,
 * src/db/sql/fragments/batchPairs.ts): with `aggregateOnTime` one row per on-time (key, window) holding its
 * pairs' count, sum, min and max, and one row per late pair with its seq and event id; without it one row
 * per pair. The batch MERGEs the aggregated rows into the windows the pairs give, and records the late pairs with their ids.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { windowSpecOf } from "../../src/core/pipelineSpec.js";
import { inTransaction, rollback, type Pool } from "../../src/db/pool.js";
import { BATCH_PAIRS } from "../../src/db/sql/fragments/batchPairs.js";
import { ensureBatchPairs, readBatch } from "../../src/db/sql/stream/readBatch.js";
import { landFile } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const dir = mkdtempSync(path.join(tmpdir(), "straggler-batch-pairs-"));

const sliding = pipeline({
  name: "batch-pairs",
  source: { landingDir: dir, format: "jsonl" },
  fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
  window: { type: "sliding", size: "10 minutes", slide: "5 minutes" },
  watermark: { delay: "0 minutes" },
});

async function land(pool: Pool, name: string, records: Record<string, unknown>[]): Promise<number> {
  const file = path.join(dir, name);
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return (await landFile(pool, sliding, file, name)).firstSeq!;
}

/** The pairs table and the MERGE's source rows after reading the batch after `afterSeq` (rolled back). */
async function readPairs(pool: Pool, afterSeq: number, aggregateOnTime: boolean) {
  const client = await pool.connect();
  try {
    await ensureBatchPairs(client);
    return await inTransaction(client, async () => {
      const watermark = (
        await client.query("SELECT watermark FROM straggler.checkpoints WHERE pipeline = $1", [sliding.name])
      ).rows[0].watermark as string;
      const read = await readBatch(client, sliding.name, {
        afterSeq,
        maxRows: 1000,
        windows: {
          spec: windowSpecOf(sliding),
          watermarkUs: BigInt(Date.parse(watermark)) * 1000n,
          aggregateOnTime,
        },
      });
      const { rows } = await client.query(
        `SELECT seq IS NOT NULL AS has_seq, event_id, group_key, to_char(to_timestamp(ws_us / 1e6) AT TIME ZONE 'UTC', 'HH24:MI') AS ws,
                late, n::int, s::text, lo::text, hi::text FROM ${BATCH_PAIRS} ORDER BY late, group_key, ws_us, event_id`,
      );
      return rollback({ latePairs: read!.latePairs, rows });
    });
  } finally {
    client.release();
  }
}

describe("the pairs table of a micro-batch", () => {
  it("on-time pairs one row per (key, window) with their aggregates, late pairs one by one with their ids; the same windows either way", async () => {
    const { pool } = await getDb();
    await land(pool, "1.jsonl", [{ id: "w", t: "2026-10-01T12:30:00Z", k: "a", v: 0 }]);
    await runBatch(pool, sliding, "once"); // watermark 12:30
    const first = await land(pool, "2.jsonl", [
      { id: "e1", t: "2026-10-01T12:31:00Z", k: "a", v: 1.5 },
      { id: "e2", t: "2026-10-01T12:32:00Z", k: "a", v: -2 },
      { id: "e3", t: "2026-10-01T12:36:00Z", k: "a", v: 4 },
      { id: "e4", t: "2026-10-01T12:33:00Z", k: "b", v: 7 },
      { id: "l1", t: "2026-10-01T12:21:00Z", k: "a", v: 9 }, // its windows [12:15, 12:25) and [12:20, 12:30) have closed
    ]);
    const aggregated = await readPairs(pool, first - 1, true);
    expect(aggregated.latePairs).toBe(2);
    expect(aggregated.rows).toEqual([
      // a: 12:25 holds e1, e2 (e3 is past it); 12:30 holds e1, e2, e3; 12:35 holds e3.
      {
        has_seq: false,
        event_id: null,
        group_key: "a",
        ws: "12:25",
        late: false,
        n: 2,
        s: "-0.5",
        lo: "-2",
        hi: "1.5",
      },
      {
        has_seq: false,
        event_id: null,
        group_key: "a",
        ws: "12:30",
        late: false,
        n: 3,
        s: "3.5",
        lo: "-2",
        hi: "4",
      },
      { has_seq: false, event_id: null, group_key: "a", ws: "12:35", late: false, n: 1, s: "4", lo: "4", hi: "4" },
      { has_seq: false, event_id: null, group_key: "b", ws: "12:25", late: false, n: 1, s: "7", lo: "7", hi: "7" },
      { has_seq: false, event_id: null, group_key: "b", ws: "12:30", late: false, n: 1, s: "7", lo: "7", hi: "7" },
      { has_seq: true, event_id: "l1", group_key: "a", ws: "12:15", late: true, n: 1, s: "9", lo: "9", hi: "9" },
      { has_seq: true, event_id: "l1", group_key: "a", ws: "12:20", late: true, n: 1, s: "9", lo: "9", hi: "9" },
    ]);
    const perPair = await readPairs(pool, first - 1, false);
    expect(perPair.rows.filter((r) => !r.late).map((r) => [r.has_seq, r.event_id, r.group_key, r.ws, r.n])).toEqual([
      [true, "e1", "a", "12:25", 1],
      [true, "e2", "a", "12:25", 1],
      [true, "e1", "a", "12:30", 1],
      [true, "e2", "a", "12:30", 1],
      [true, "e3", "a", "12:30", 1],
      [true, "e3", "a", "12:35", 1],
      [true, "e4", "b", "12:25", 1],
      [true, "e4", "b", "12:30", 1],
    ]);
    expect(perPair.rows.filter((r) => r.late)).toEqual(aggregated.rows.filter((r) => r.late));

    // The batch itself (aggregated): the windows as the pairs give them, the late pairs recorded with their ids.
    await runBatch(pool, sliding, "once");
    const windows = await pool.query(
      `SELECT group_key, to_char(window_start AT TIME ZONE 'UTC', 'HH24:MI') AS ws, event_count::int AS n, value_sum::text AS s
         FROM straggler.window_results_table WHERE pipeline = $1 AND window_start >= '2026-10-01T12:25:00Z' ORDER BY 1, 2`,
      [sliding.name],
    );
    expect(windows.rows).toEqual([
      { group_key: "a", ws: "12:25", n: 3, s: "-0.5" }, // w (12:30, v 0) is in 12:25 and 12:30 too
      { group_key: "a", ws: "12:30", n: 4, s: "3.5" },
      { group_key: "a", ws: "12:35", n: 1, s: "4" },
      { group_key: "b", ws: "12:25", n: 1, s: "7" },
      { group_key: "b", ws: "12:30", n: 1, s: "7" },
    ]);
    const late = await pool.query(
      `SELECT event_id, to_char(window_start AT TIME ZONE 'UTC', 'HH24:MI') AS ws FROM straggler.late_events WHERE pipeline = $1 ORDER BY window_start`,
      [sliding.name],
    );
    expect(late.rows).toEqual([
      { event_id: "l1", ws: "12:15" },
      { event_id: "l1", ws: "12:20" },
    ]);
  });
});
