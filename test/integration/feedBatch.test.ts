/**
 * A micro-batch's input from its landing's summary (src/db/sql/stream/feedBatch.ts, src/core/spanSummary.ts)
 * against the same batch read back from bronze (src/db/sql/stream/readBatch.ts): the same pairs table (on-time
 * windows aggregated, every late pair with its seq and event id) and the same description of the batch (rows,
 * quarantined rows, event times with their average, the input's latest times), for tumbling and sliding windows
 * with an offset, values of every scale and sign, a pipeline without values, quarantined rows and late windows;
 * and the batch takes the summary only where it stands for the read (`feedsBatch`).
 */
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { windowSpecOf } from "../../src/core/pipelineSpec.js";
import { inTransaction, rollback, type Pool } from "../../src/db/pool.js";
import { BATCH_PAIRS } from "../../src/db/sql/fragments/batchPairs.js";
import { feedBatch, feedsBatch, type LandedSpan } from "../../src/db/sql/stream/feedBatch.js";
import { ensureBatchPairs, readBatch, type BatchRead } from "../../src/db/sql/stream/readBatch.js";
import { classifyInMemory } from "../../src/ingest/classifyLines.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { LandedIds } from "../../src/ingest/landedIds.js";
import { readRecords } from "../../src/ingest/readers.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

const config = (name: string, window: Record<string, unknown>, value = true) =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", groupKey: ["k"], ...(value ? { value: "v" } : {}) },
    window,
    watermark: { delay: "5 minutes" },
    admission: { maxFutureSkew: null },
  });

async function* recordsOf(lines: object[]) {
  yield* readRecords(
    (async function* () {
      yield Buffer.from(lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    })(),
    "jsonl",
  );
}

/** Each pipeline's replay's own ids (the replay lands every span with them: the pipeline's highest seq is read above the last). */
const replays = new Map<string, LandedIds>();

/** Lands `lines` as `source`, classified in memory with their summary; the span as the replay would hand it on. */
async function land(pool: Pool, p: PipelineConfig, source: string, lines: object[]): Promise<LandedSpan> {
  if (!replays.has(p.name)) replays.set(p.name, new LandedIds(1000));
  const classified = await classifyInMemory(
    p,
    source,
    recordsOf(lines),
    { landingTimeMs: Date.UTC(2026, 9, 2), summarize: 1000 },
    1000,
  );
  let span: LandedSpan | undefined;
  await landRecords(pool, p, source, classified, {
    landingTimeMs: Date.UTC(2026, 9, 2),
    onRowsAsClassified: (range) => (span = { summary: classified.tally.summary!, ...range, input: "default" }),
    landedIds: replays.get(p.name)!,
  });
  return span!;
}

/** The batch after the checkpoint read both ways (each rolled back): what each found and left in the pairs table. */
async function bothWays(pool: Pool, p: PipelineConfig, span: LandedSpan) {
  const client = await pool.connect();
  try {
    await ensureBatchPairs(client);
    const once = (how: (afterSeq: number, watermarkUs: bigint | null) => Promise<BatchRead | null>) =>
      inTransaction(client, async () => {
        const c = (
          await client.query(
            "SELECT last_offset, (extract(epoch FROM watermark) * 1000000)::bigint::text AS wm FROM straggler.checkpoints WHERE pipeline = $1",
            [p.name],
          )
        ).rows[0];
        const afterSeq = c === undefined ? 0 : Number(c.last_offset);
        const watermarkUs = c?.wm == null ? null : BigInt(c.wm);
        const read = await how(afterSeq, watermarkUs);
        const { rows } = await client.query(
          `SELECT seq, event_id, group_key, ws_us::text, we_us::text, late, n::int, s::text, lo::text, hi::text FROM ${BATCH_PAIRS}
            ORDER BY late, group_key, ws_us, seq`,
        );
        return rollback({ read, rows, fed: feedsBatch(span, afterSeq, p.trigger.maxRowsPerBatch) });
      });
    const read = await once((afterSeq, watermarkUs) =>
      readBatch(client, p.name, {
        afterSeq,
        maxRows: p.trigger.maxRowsPerBatch,
        untilSeq: span.lastSeq,
        windows: { spec: windowSpecOf(p), watermarkUs, aggregateOnTime: true },
      }),
    );
    const fed = await once((afterSeq, watermarkUs) => feedBatch(client, p.name, span, afterSeq, watermarkUs));
    return { read, fed };
  } finally {
    client.release();
  }
}

const at = (min: number, sec = 0, us = 0) =>
  new Date(Date.UTC(2026, 9, 1, 12, min, sec)).toISOString().replace(".000Z", `.${String(us).padStart(6, "0")}Z`);

describe("a micro-batch fed from its landing's summary", () => {
  for (const [kind, window, latePairs, lateIds] of [
    ["tumbling", { type: "tumbling", size: "10 minutes" }, 2, ["l1", "l2"]],
    // l1 and l2 each in [12:16, 12:26) and [12:21, 12:31), both closed.
    [
      "sliding with an offset",
      { type: "sliding", size: "10 minutes", slide: "5 minutes", offset: "1 minute" },
      4,
      ["l1", "l1", "l2", "l2"],
    ],
  ] as const) {
    it(`${kind}: the same pairs and description as the batch read back from bronze, late windows and quarantined rows included`, async () => {
      const { pool } = await getDb();
      const p = config(`feed-${kind.split(" ")[0]}`, window);
      const first = await land(pool, p, "s1", [
        { id: "a1", t: at(30), k: "a", v: "1.5" },
        { id: "a2", t: at(41, 7, 123456), k: "a", v: "-2" },
      ]);
      expect((await bothWays(pool, p, first)).fed.fed).toBe(true);
      await runBatch(pool, p, "once"); // watermark 12:36:07.123456
      const second = await land(pool, p, "s2", [
        { id: "e1", t: at(44, 59, 999999), k: "a", v: "1.50" },
        { id: "e2", t: at(45), k: "a", v: "-0.125" },
        { id: "e3", t: at(46, 1, 1), k: "b", v: "12345678901234567890.5" },
        { id: "e4", t: at(47), k: "b", v: "99999999999999999999" },
        { id: "bad", t: "not a time", k: "a", v: "1" },
        { id: "l1", t: at(21), k: "a", v: "9.25" }, // windows closed before this batch: late
        { id: "l2", t: at(25, 30), k: "b", v: "-7" },
        { id: "e5", t: at(48), k: "a", v: "7.5" },
        { id: "e6", t: at(49), k: "a", v: "7.50" }, // equal to e5: min and max keep the later text
        { id: "e7", t: at(50), k: "a", v: "0" },
      ]);
      const { read, fed } = await bothWays(pool, p, second);
      expect(fed.fed).toBe(true);
      expect(fed.read).toEqual(read.read);
      expect(fed.rows).toEqual(read.rows);
      expect(read.read!.latePairs).toBe(latePairs);
      expect(read.read!.input.numQuarantinedRows).toBe(1);
      expect(read.rows.filter((r) => r.late).map((r) => r.event_id)).toEqual(lateIds);
    });
  }

  it("a pipeline without values: counts only, the same both ways", async () => {
    const { pool } = await getDb();
    const p = config("feed-counts", { type: "tumbling", size: "10 minutes" }, false);
    const span = await land(pool, p, "s1", [
      { id: "a", t: at(1), k: "x" },
      { id: "b", t: at(2), k: "x" },
      { id: "c", t: at(15), k: "y" },
    ]);
    const { read, fed } = await bothWays(pool, p, span);
    expect(fed.read).toEqual(read.read);
    expect(fed.rows).toEqual(read.rows);
    expect(read.rows.map((r) => [r.group_key, r.n, r.s])).toEqual([
      ["x", 2, null],
      ["y", 1, null],
    ]);
  });

  it("a landing of quarantined rows only: no pairs, no event time, no input", async () => {
    const { pool } = await getDb();
    const p = config("feed-none", { type: "tumbling", size: "10 minutes" });
    const span = await land(pool, p, "s1", [{ id: "a", t: "never", k: "x", v: "1" }]);
    const { read, fed } = await bothWays(pool, p, span);
    expect(fed.read).toEqual(read.read);
    expect(read.read).toMatchObject({ input: { numInputRows: 0, numQuarantinedRows: 1 }, inputs: [], latePairs: 0 });
  });

  it("the summary stands for the read only where it can: usable, at the checkpoint, within one batch, no gap in its range", async () => {
    const { pool } = await getDb();
    const p = config("feed-when", { type: "tumbling", size: "10 minutes" });
    const span = await land(pool, p, "s1", [
      { id: "a", t: at(1), k: "x", v: "1" },
      { id: "b", t: at(2), k: "x", v: "1e2" },
    ]);
    expect(span.summary.unusable).toBe("a value that is not a plain decimal");
    const usable = { ...span, summary: { ...span.summary, unusable: null } };
    expect(feedsBatch(usable, span.seqBefore, 1000)).toBe(true);
    expect(feedsBatch(usable, span.seqBefore - 1, 1000)).toBe(false); // the checkpoint is not where the landing started
    expect(feedsBatch(usable, span.seqBefore, 1)).toBe(false); // more rows than one batch
    expect(feedsBatch({ ...usable, lastSeq: usable.lastSeq + 1 }, span.seqBefore, 1000)).toBe(false); // a gap
    expect(feedsBatch(undefined, span.seqBefore, 1000)).toBe(false);
  });
});
