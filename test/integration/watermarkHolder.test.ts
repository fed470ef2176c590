/**
 * What holds the watermark (docs/continuous-reconcile.md): two inputs a and b (delay 5 minutes,
 * idleTimeout 30 minutes), as in "Several inputs": the holder after each batch, since when, how far
 * behind the other, idle inputs named as such — in `GET /pipelines`'s shape and in /metrics.
 */
import { describe, expect, it } from "vitest";
import type { RawRecord } from "../../src/core/admission.js";
import type { Pool } from "../../src/db/pool.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { createMetrics } from "../../src/observe/metrics.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { watermarkHolder } from "../../src/stream/watermarkHolder.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const at = (hm: string) => `2026-10-01T${hm}:00.000Z`;
const p = pipeline({
  name: "holder",
  source: { format: "jsonl" },
  fields: { eventId: "id", eventTime: "t", ingestionTime: "it", value: "v" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "5 minutes", idleTimeout: "30 minutes", inputs: { a: null, b: null } },
});
let sources = 0;

async function landAndRun(pool: Pool, input: string, id: string, t: string, it: string): Promise<string> {
  async function* records(): AsyncGenerator<RawRecord> {
    const fields = { id, t: at(t), v: "1", it: at(it) };
    yield { line: 1, raw: JSON.stringify(fields), fields };
  }
  await landRecords(pool, p, `test:${++sources}`, records(), { landingTimeMs: Date.parse(at("12:00")), input });
  const b = await runBatch(pool, p, "once");
  return (
    await pool.query("SELECT timestamp FROM straggler.batch_progress WHERE pipeline = $1 AND batch_id = $2", [
      p.name,
      b!.batchId,
    ])
  ).rows[0].timestamp;
}

describe("what holds the watermark", () => {
  it("a holds (tie, then b idle) since batch 0; b back behind holds since its batch, 25 minutes behind a", async () => {
    const { pool } = await getDb();
    expect(await watermarkHolder(pool, p)).toBeNull();
    const t0 = await landAndRun(pool, "a", "a1", "12:00", "12:00");
    await landAndRun(pool, "b", "b1", "12:00", "12:00");
    expect(await watermarkHolder(pool, p)).toEqual({
      input: "a",
      watermark: at("11:55"),
      since: t0,
      behindOthersMs: 0,
      others: [{ input: "b", watermark: at("11:55"), idle: false, aheadOfHolderMs: 0 }],
    });
    await landAndRun(pool, "a", "a2", "12:30", "12:30"); // b has been silent for 30 minutes: idle
    expect(await watermarkHolder(pool, p)).toEqual({
      input: "a",
      watermark: at("12:25"),
      since: t0,
      behindOthersMs: null,
      others: [{ input: "b", watermark: at("11:55"), idle: true, aheadOfHolderMs: -1_800_000 }],
    });
    const t3 = await landAndRun(pool, "b", "b2", "12:05", "12:31"); // b is back, its watermark 12:00
    expect(await watermarkHolder(pool, p)).toEqual({
      input: "b",
      watermark: at("12:00"),
      since: t3,
      behindOthersMs: 1_500_000,
      others: [{ input: "a", watermark: at("12:25"), idle: false, aheadOfHolderMs: 1_500_000 }],
    });
    const text = await createMetrics([p]).scrape(pool);
    const lines = text.split("\n").filter((l) => /^straggler_(watermark_holder|input_idle)/.test(l));
    expect(lines).toEqual([
      'straggler_watermark_holder{pipeline="holder",input="b"} 1',
      `straggler_watermark_holder_since_seconds{pipeline="holder",input="b"} ${Date.parse(t3) / 1000}`,
      'straggler_watermark_holder_behind_seconds{pipeline="holder",input="b"} 1500',
      'straggler_input_idle{pipeline="holder",input="b"} 0',
      'straggler_input_idle{pipeline="holder",input="a"} 0',
    ]);
  });
});
