/**
 * The lateness histogram the stream keeps (src/db/sql/lateness/, docs/lateness.md) answers as the
 * full replay does (`straggler lateness --exact`): on the repository's pipelines over the real
 * datasets they use, and on a random workload with tumbling and sliding windows, every figure the
 * histogram gives equals the replay's, for the candidate delays and for every delay in a sweep; and
 * carried with the policy version (src/db/sql/lateness/histogramVersions.ts), after a rebuild under
 * a new policy and its cutover, and after the rollback, it answers as the replay of the live policy.
 */
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { loadPipelines, type PipelineConfig } from "../../src/config/pipelines.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { latenessReport } from "../../src/observe/lateness.js";
import { latenessAdvice } from "../../src/observe/latenessAdvice.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { cutover } from "../../src/lifecycle/cutover.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
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

/**
 * Asserts the histogram's report equals the replay's for `p`, at the candidates and at `sweepMs`; returns the replay's.
 * `recordedOpen`: the histogram gives the recorded open windows at the configured delay (false after a cutover: the
 * batches before it ran another policy's windows, and it gives none).
 */
async function expectSameAnswers(pool: Pool, p: PipelineConfig, sweepMs: number[], recordedOpen = true) {
  const kept = await latenessAdvice(pool, p, { delaysMs: sweepMs });
  const exact = await latenessAdvice(pool, p, { delaysMs: sweepMs, exact: true });
  expect([kept.source, exact.source]).toEqual(["histogram", "replay"]);
  expect(kept.distribution).toEqual(exact.distribution);
  expect(kept.whatIf.delays.map(dropFigures)).toEqual(exact.whatIf.delays.map(dropFigures));
  expect(kept.whatIf.delays.map((d) => d.labels)).toEqual(exact.whatIf.delays.map((d) => d.labels));
  expect(dropFigures(kept.recommendation)).toEqual(dropFigures(exact.recommendation));
  expect({ ...kept.whatIf, delays: [] }).toEqual({ ...exact.whatIf, delays: [] });
  const configured = (r: typeof kept) => r.whatIf.delays.find((d) => d.labels.includes("configured"))!.openWindows;
  if (!recordedOpen) {
    expect(configured(kept)).toBeNull();
    return exact;
  }
  expect(configured(kept)!.max).toBe(configured(exact)!.max);
  expect(configured(kept)!.mean).toBeCloseTo(configured(exact)!.mean, 9);
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

describe("the kept lateness histogram carried with the policy version", () => {
  it("rebuilt under a new policy, cut over after more batches, streamed on, rolled back: each time the histogram answers as the replay of the live policy", async () => {
    const { pool } = await getDb();
    const T0 = Date.parse("2026-10-01T00:00:00Z");
    const base = {
      name: "kept-versions",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", ingestionTime: "i", groupKey: ["k"], value: "v" },
      timestamps: { format: "iso8601" },
      watermark: { delay: "3 minutes" },
      trigger: { maxRowsPerBatch: 29 },
      lateness: { histogram: true },
    };
    const old = pipeline({ ...base, window: { type: "tumbling", size: "10 minutes" } });
    // Other windows, and the first half hour's events refused (TOO_OLD): other rows, other pairs, another M.
    const next = pipeline({
      ...base,
      window: { type: "sliding", size: "10 minutes", slide: "4 minutes" },
      admission: { minEventTime: new Date(T0 + 30 * MIN).toISOString() },
    });
    const rand = prng(26);
    let clock = T0,
      j = 0;
    const land = async (p: PipelineConfig, n: number, stream = true) => {
      for (let at = 0; at < n; at += 50) {
        const lines = Array.from({ length: 50 }, () => {
          clock += Math.floor(rand() * 30_000);
          const late = Math.floor(rand() < 0.85 ? rand() * 4 * MIN : rand() * 40 * MIN);
          return JSON.stringify({
            id: `e${j}`,
            t: new Date(clock - late).toISOString(),
            i: new Date(clock).toISOString(),
            k: ["a", "b", null][j++ % 3],
            v: j % 5,
          });
        });
        await landStream(pool, p, Readable.from([lines.join("\n") + "\n"]), "test");
        if (stream) await runBatch(pool, p, "once");
      }
      while (stream && (await runBatch(pool, p, "once")));
    };
    const sweep = Array.from({ length: 41 }, (_, i) => i * MIN);
    const atZero = (r: Awaited<ReturnType<typeof expectSameAnswers>>) => {
      const d = r.whatIf.delays.find((o) => o.delayMs === 0)!;
      return {
        batches: r.whatIf.batches,
        rows: r.whatIf.rows,
        droppedPairs: d.droppedPairs,
        droppedWindows: d.droppedWindows,
        recommendedMs: r.recommendation.delayMs,
      };
    };

    await land(old, 300);
    const before = atZero(await expectSameAnswers(pool, old, sweep));
    expect(before).toEqual({ batches: 11, rows: 300, droppedPairs: 42, droppedWindows: 22, recommendedMs: 1_929_641 });
    // Rows landed but not streamed yet: the rebuild's bound is past the last batch, and the next batch straddles it.
    await land(old, 50, false);
    const r = await rebuild(pool, next);
    // Batches after the rebuild's bound, streamed by the live version: the cutover counts them under the new policy.
    await land(old, 100);
    const rowsOf = async (table: string, version?: number) =>
      (
        await pool.query(
          `SELECT count(*)::int AS n FROM straggler.${table} WHERE pipeline = $1${version === undefined ? "" : " AND version = $2"}`,
          [old.name, ...(version === undefined ? [] : [version])],
        )
      ).rows[0].n as number;
    const liveRows = [await rowsOf("lateness_histogram"), await rowsOf("lateness_windows")];
    const cut = await cutover(pool, next, r.version);
    // The live histogram stored whole under the live version's number; the target's stored copy gone (it is live).
    expect([
      await rowsOf("version_lateness_histogram", cut.previous!),
      await rowsOf("version_lateness_windows", cut.previous!),
    ]).toEqual(liveRows);
    expect(await rowsOf("version_lateness_histogram", r.version)).toBe(0);
    const afterCutover = atZero(await expectSameAnswers(pool, next, sweep, false));
    expect(afterCutover).toEqual({
      batches: 17,
      rows: 303,
      droppedPairs: 73,
      droppedWindows: 44,
      recommendedMs: 2_198_922,
    });
    // The stream goes on from the histogram the cutover put live (its per-window state too).
    await land(next, 150);
    expect(atZero(await expectSameAnswers(pool, next, sweep, false))).toEqual({
      batches: 23,
      rows: 453,
      droppedPairs: 132,
      droppedWindows: 69,
      recommendedMs: 2_198_922,
    });
    // Rolled back: the old version's histogram, with the batches the new one ran counted under the old policy.
    const back = await cutover(pool, old, cut.previous!);
    expect(back.rollback).toBe(true);
    expect(atZero(await expectSameAnswers(pool, old, sweep, false))).toEqual({
      batches: 23,
      rows: 600,
      droppedPairs: 95,
      droppedWindows: 45,
      recommendedMs: 1_929_641,
    });
    await land(old, 100);
    expect(atZero(await expectSameAnswers(pool, old, sweep, false))).toEqual({
      batches: 27,
      rows: 700,
      droppedPairs: 105,
      droppedWindows: 49,
      recommendedMs: 1_929_641,
    });
  }, 600_000);
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
