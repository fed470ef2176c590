/**
 * The lateness histogram the stream keeps (src/db/sql/lateness/, docs/lateness.md) answers as the
 * full replay does (`straggler lateness --exact`): on the repository's pipelines over the real
 * datasets they use, and on a random workload with tumbling and sliding windows, every figure the
 * histogram gives equals the replay's, for the candidate delays and for every delay in a sweep.
 */
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { loadPipelines, type PipelineConfig } from "../../src/config/pipelines.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { latenessReport } from "../../src/observe/lateness.js";
import { latenessAdvice } from "../../src/observe/latenessAdvice.js";
import { runBatch } from "../../src/stream/runBatch.js";
import type { Pool } from "../../src/db/pool.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline, REPO_ROOT, SHARED_DATA } from "../helpers/fixtures.js";
import { prng } from "../helpers/prng.js";

const getDb = useTestDatabase();
const MIN = 60_000;

/** The figures both sources give, per delay. */
const dropFigures = (o: {
  delayMs: number;
  droppedPairs: number;
  droppedWindows: number;
  eventsAffected: number;
  dropShare: number;
}) => ({
  delayMs: o.delayMs,
  droppedPairs: o.droppedPairs,
  droppedWindows: o.droppedWindows,
  eventsAffected: o.eventsAffected,
  dropShare: o.dropShare,
});

/** Asserts the histogram's report equals the replay's for `p`, at the candidates and at `sweepMs`; returns the replay's. */
async function expectSameAnswers(pool: Pool, p: PipelineConfig, sweepMs: number[]) {
  const kept = await latenessAdvice(pool, p, { delaysMs: sweepMs });
  const exact = await latenessAdvice(pool, p, { delaysMs: sweepMs, exact: true });
  expect([kept.source, exact.source]).toEqual(["histogram", "replay"]);
  expect(kept.distribution).toEqual(exact.distribution);
  expect(kept.whatIf.delays.map(dropFigures)).toEqual(exact.whatIf.delays.map(dropFigures));
  expect(kept.whatIf.delays.map((d) => d.labels)).toEqual(exact.whatIf.delays.map((d) => d.labels));
  expect(dropFigures(kept.recommendation)).toEqual(dropFigures(exact.recommendation));
  expect({ ...kept.whatIf, delays: [] }).toEqual({ ...exact.whatIf, delays: [] });
  const configured = (r: typeof kept) => r.whatIf.delays.find((d) => d.labels.includes("configured"))!.openWindows!;
  expect(configured(kept).max).toBe(configured(exact).max);
  expect(configured(kept).mean).toBeCloseTo(configured(exact).mean, 9);
  return exact;
}

describe("the kept lateness histogram on the real datasets", () => {
  const pipelines = loadPipelines(path.join(REPO_ROOT, "pipelines", "pipelines.yaml"));
  it.each([
    [
      "nyc-taxi",
      path.join(SHARED_DATA, "nyc-taxi-gx-samples", "yellow_tripdata_sample_2020-01.csv"),
      [0, 30 * MIN, 2 * 60 * MIN],
      true,
    ],
    [
      "usgs-earthquakes",
      path.join(SHARED_DATA, "usgs-earthquakes", "usgs_all_month_2015-08.csv"),
      [0, 60 * MIN, 6 * 60 * MIN],
      false,
    ],
  ])(
    "%s: the histogram answers as the replay of every row",
    async (name, file, sweepMs, dropsAtZero) => {
      const { pool } = await getDb();
      const configured = pipelines.find((p) => p.name === name)!;
      // Batches of 500 rows in the file's order, so that later batches meet windows earlier ones passed.
      const p = {
        ...configured,
        lateness: { histogram: true },
        trigger: { ...configured.trigger, maxRowsPerBatch: 500 },
      };
      await landFile(pool, p, file, path.basename(file));
      while (await runBatch(pool, p, "once"));
      const exact = await expectSameAnswers(pool, p, sweepMs);
      expect(exact.whatIf.rows).toBeGreaterThan(8000);
      // The catalog's file is in event-time order: no pair is late at any delay, and the histogram says so too.
      expect(exact.whatIf.delays.find((d) => d.delayMs === 0)!.droppedPairs > 0).toBe(dropsAtZero);
    },
    600_000,
  );
});

describe("the kept lateness histogram on a random workload", () => {
  const T0 = Date.parse("2026-10-01T00:00:00Z");
  it.each([
    ["tumbling", { type: "tumbling", size: "10 minutes" }, 21],
    ["sliding", { type: "sliding", size: "10 minutes", slide: "4 minutes" }, 22],
  ])(
    "%s windows: equal figures at every delay of a sweep, the windows of a pair moved as their slack grows",
    async (kind, window, seed) => {
      const { pool } = await getDb();
      const p = pipeline({
        name: `kept-${kind}`,
        source: { format: "jsonl" },
        fields: { eventId: "id", eventTime: "t", ingestionTime: "i", groupKey: ["k"], value: "v" },
        timestamps: { format: "iso8601" },
        window,
        watermark: { delay: "3 minutes" },
        trigger: { maxRowsPerBatch: 29 },
        lateness: { histogram: true },
      });
      const rand = prng(seed);
      let clock = T0;
      const lines = Array.from({ length: 600 }, (_, j) => {
        clock += Math.floor(rand() * 30_000);
        const late = Math.floor(rand() < 0.85 ? rand() * 4 * MIN : rand() * 40 * MIN);
        return JSON.stringify({
          id: `e${j}`,
          t: new Date(clock - late).toISOString(),
          i: new Date(clock).toISOString(),
          k: ["a", "b", null][j % 3],
          v: j % 5,
        });
      });
      for (let at = 0; at < lines.length; at += 50) {
        await landStream(pool, p, Readable.from([lines.slice(at, at + 50).join("\n") + "\n"]), "test");
        await runBatch(pool, p, "once");
      }
      while (await runBatch(pool, p, "once"));
      const sweep = Array.from({ length: 41 }, (_, i) => i * MIN);
      const exact = await expectSameAnswers(pool, p, sweep);
      expect(exact.whatIf.delays.find((d) => d.delayMs === 0)!.droppedWindows).toBeGreaterThan(
        exact.whatIf.delays.find((d) => d.delayMs === 3 * MIN)!.droppedWindows,
      );
      // The replay's own function agrees (latenessAdvice with exact: true is latenessReport).
      expect((await latenessReport(pool, p, { delaysMs: sweep })).whatIf.delays.map(dropFigures)).toEqual(
        exact.whatIf.delays.map(dropFigures),
      );
    },
    600_000,
  );
});

describe("a pipeline without the kept histogram (the default)", () => {
  it("keeps no histogram row and the advisor answers from the replay", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "kept-off",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", ingestionTime: "i", groupKey: ["k"], value: "v" },
      timestamps: { format: "iso8601" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "1 minute" },
    });
    expect(p.lateness.histogram).toBe(false);
    const lines = [
      { id: "a", t: "2026-10-01T00:01:00Z", i: "2026-10-01T00:01:30Z", k: "x", v: 1 },
      { id: "b", t: "2026-10-01T00:30:00Z", i: "2026-10-01T00:30:10Z", k: "x", v: 2 },
    ].map((o) => JSON.stringify(o));
    await landStream(pool, p, Readable.from([lines.join("\n") + "\n"]), "test");
    while (await runBatch(pool, p, "once"));
    const { rows } = await pool.query(
      "SELECT count(*)::int AS n FROM straggler.lateness_histogram WHERE pipeline = $1",
      [p.name],
    );
    expect(rows[0].n).toBe(0);
    const advice = await latenessAdvice(pool, p, { delaysMs: [0] });
    expect(advice.source).toBe("replay");
    expect(advice.distribution.count).toBe(2);
  });
});
