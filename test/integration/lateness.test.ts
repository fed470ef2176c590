import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { landStream } from "../../src/ingest/landFile.js";
import { latenessReport } from "../../src/observe/lateness.js";
import { runBatch } from "../../src/stream/runBatch.js";
import type { Pool } from "../../src/db/pool.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { prng } from "../helpers/prng.js";

const getDb = useTestDatabase();
const MIN = 60_000;
const T0 = Date.parse("2026-10-01T00:00:00Z");

const pipelineWith = (name: string, delay: string, window: object): PipelineConfig =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", ingestionTime: "i", groupKey: ["k"], value: "v" },
    timestamps: { format: "iso8601" },
    window,
    watermark: { delay },
    trigger: { maxRowsPerBatch: 37 },
  });

interface Event {
  id: string;
  t: string;
  i: string;
  k: string | null;
  v: number;
  latenessMs: number;
}

/** `n` events in arrival order: mostly a few minutes late, some an hour or two, some ahead of their arrival. */
function workload(seed: number, n: number): Event[] {
  const rand = prng(seed);
  let clock = T0;
  return Array.from({ length: n }, (_, j) => {
    clock += Math.floor(rand() * 40_000);
    const u = rand();
    const latenessMs = Math.floor(
      u < 0.04 ? -rand() * 10 * MIN : u < 0.8 ? rand() * 3 * MIN : u < 0.95 ? rand() * 20 * MIN : rand() * 120 * MIN,
    );
    const key = ["a", "b", "c", null][Math.floor(rand() * 4)]!;
    return {
      id: `e${j}`,
      t: new Date(clock - latenessMs).toISOString(),
      i: new Date(clock).toISOString(),
      k: key,
      v: j % 7,
      latenessMs,
    };
  });
}

/** Lands `events` in random chunks into every pipeline, running the same random number of batches after each. */
async function run(pool: Pool, pipelines: PipelineConfig[], events: Event[], seed: number): Promise<void> {
  const rand = prng(seed);
  for (let at = 0; at < events.length;) {
    const chunk = events.slice(at, (at += 20 + Math.floor(rand() * 60)));
    const batches = Math.floor(rand() * 3);
    for (const p of pipelines) {
      await landStream(
        pool,
        p,
        Readable.from([chunk.map(({ latenessMs: _, ...e }) => JSON.stringify(e)).join("\n") + "\n"]),
        "test",
      );
      for (let b = 0; b < batches; b++) await runBatch(pool, p, "once");
    }
  }
  for (const p of pipelines) while (await runBatch(pool, p, "once"));
}

/** What the real run recorded for pipeline `name`. */
async function recorded(pool: Pool, name: string) {
  const { rows } = await pool.query(
    `SELECT (SELECT sum(num_rows_dropped_by_watermark)::int FROM straggler.batch_progress WHERE pipeline = $1) AS pairs,
            (SELECT count(*)::int FROM straggler.late_windows WHERE pipeline = $1) AS windows,
            (SELECT count(DISTINCT seq)::int FROM straggler.late_events WHERE pipeline = $1) AS events,
            (SELECT max(num_rows_total)::int FROM straggler.batch_progress WHERE pipeline = $1) AS open_max,
            (SELECT avg(num_rows_total)::float8 FROM straggler.batch_progress WHERE pipeline = $1) AS open_mean,
            (SELECT count(*)::int FROM straggler.batch_progress WHERE pipeline = $1) AS batches,
            (SELECT count(*)::int FROM straggler.window_results_table WHERE pipeline = $1 AND is_final) AS final`,
    [name],
  );
  return rows[0] as {
    pairs: number;
    windows: number;
    events: number;
    open_max: number;
    open_mean: number;
    batches: number;
    final: number;
  };
}

/** Nearest rank, as `percentile_disc`. */
const nearestRank = (sorted: number[], q: number) => sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;

describe.each([
  ["tumbling", { type: "tumbling", size: "10 minutes" }, 11],
  ["sliding", { type: "sliding", size: "10 minutes", slide: "4 minutes" }, 12],
])("lateness what-if on a random workload (%s windows)", (kind, window, seed) => {
  it("equals what real runs with two delays recorded, over the same arrival order and batch boundaries", async () => {
    const { pool } = await getDb();
    const long = pipelineWith(`${kind}-long`, "7 minutes", window),
      short = pipelineWith(`${kind}-short`, "2 minutes", window);
    const events = workload(seed, 700);
    await run(pool, [long, short], events, seed);
    const report = await latenessReport(pool, long, { delaysMs: [2 * MIN], pageSize: 50, targetDropShare: 0.02 });

    for (const [p, delayMs] of [
      [long, 7 * MIN],
      [short, 2 * MIN],
    ] as const) {
      const real = await recorded(pool, p.name);
      const outcome = report.whatIf.delays.find((d) => d.delayMs === delayMs)!;
      expect(real.pairs).toBeGreaterThan(0);
      expect([outcome.droppedPairs, outcome.droppedWindows, outcome.eventsAffected, outcome.dropShare]).toEqual([
        real.pairs,
        real.windows,
        real.events,
        real.events / 700,
      ]);
      expect(outcome.openWindows.max).toBe(real.open_max);
      expect(outcome.openWindows.mean).toBeCloseTo(real.open_mean, 9);
      expect(outcome.timeToFinal.windows).toBe(real.final);
    }
    const real = await recorded(pool, long.name);
    expect(report.whatIf).toMatchObject({ batches: real.batches, rows: 700, recordedDroppedPairs: real.pairs });
    expect(report.whatIf.delays.find((d) => d.delayMs === 7 * MIN)!.labels).toEqual(["configured"]);

    // The distribution, against the generated lateness.
    const sorted = events.map((e) => e.latenessMs).sort((a, b) => a - b);
    expect(report.distribution).toMatchObject({
      count: 700,
      minMs: sorted[0],
      p50Ms: nearestRank(sorted, 0.5),
      p90Ms: nearestRank(sorted, 0.9),
      p99Ms: nearestRank(sorted, 0.99),
      p999Ms: nearestRank(sorted, 0.999),
      maxMs: sorted.at(-1),
    });
    expect(report.distribution.histogram.map((h) => h.count)).toEqual(
      report.distribution.histogram.map(
        (h) => sorted.filter((l) => (h.fromMs === null || l >= h.fromMs) && (h.toMs === null || l < h.toMs)).length,
      ),
    );

    // The recommendation is the smallest delay under the target: one ms less is over it.
    const rec = report.recommendation;
    expect(rec.dropShare).toBeLessThanOrEqual(0.02);
    const below = await latenessReport(pool, long, { delaysMs: [rec.delayMs - 1] });
    expect(below.whatIf.delays.find((d) => d.delayMs === rec.delayMs - 1)!.dropShare).toBeGreaterThan(0.02);
  });
});

describe("lateness report options", () => {
  it("restricts to an event-time range and splits the distribution per group key", async () => {
    const { pool } = await getDb();
    const p = pipelineWith("ranged", "5 minutes", { type: "tumbling", size: "10 minutes" });
    const events = workload(7, 300);
    await run(pool, [p], events, 7);
    const from = "2026-10-01T00:30:00.000Z",
      to = "2026-10-01T01:30:00.000Z";
    const inRange = events.filter((e) => e.t >= from && e.t < to);
    const report = await latenessReport(pool, p, { range: { from, to }, byKey: true });
    expect(report.range).toEqual({ from, to });
    expect(report.distribution.count).toBe(inRange.length);
    const groups = new Map<string | null, number[]>();
    for (const e of inRange) groups.set(e.k, [...(groups.get(e.k) ?? []), e.latenessMs]);
    const canonical = (list: { groupKey: string | null }[]) =>
      [...list].sort((a, b) => JSON.stringify(a.groupKey).localeCompare(JSON.stringify(b.groupKey)));
    const expected = [...groups].map(([groupKey, l]) => ({
      groupKey,
      count: l.length,
      maxMs: Math.max(...l),
      p50Ms: nearestRank(
        l.sort((a, b) => a - b),
        0.5,
      ),
    }));
    expect(
      canonical(report.byKey!.map((k) => ({ groupKey: k.groupKey, count: k.count, maxMs: k.maxMs, p50Ms: k.p50Ms }))),
    ).toEqual(canonical(expected));
    expect(report.byKey!.map((k) => k.count)).toEqual(expected.map((k) => k.count).sort((a, b) => b - a));
    // Dropped pairs of the range: the real run's late events with an event time in the range.
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM straggler.late_events l JOIN straggler.bronze_events b USING (pipeline, seq)
        WHERE l.pipeline = $1 AND b.event_time >= $2 AND b.event_time < $3`,
      [p.name, from, to],
    );
    expect(report.whatIf.delays.find((d) => d.labels.includes("configured"))!.droppedPairs).toBe(rows[0].n);
  });

  it("merges equal delays into one row, each label once: the configured delay asked twice is 'configured, asked'", async () => {
    const { pool } = await getDb();
    const p = pipelineWith("merged", "5 minutes", { type: "tumbling", size: "10 minutes" });
    await run(pool, [p], workload(3, 100), 3);
    // As `--delay "5 minutes" --delay "300 seconds" --delay "3 minutes" --delay "180 seconds"` asks.
    const report = await latenessReport(pool, p, { delaysMs: [5 * MIN, 5 * MIN, 3 * MIN, 3 * MIN] });
    expect(report.whatIf.delays.filter((d) => d.delayMs === 5 * MIN).map((d) => d.labels)).toEqual([
      ["configured", "asked"],
    ]);
    expect(report.whatIf.delays.filter((d) => d.delayMs === 3 * MIN).map((d) => d.labels)).toEqual([["asked"]]);
  });

  it("refuses a negative delay and a target outside [0, 1]", async () => {
    const { pool } = await getDb();
    const p = pipelineWith("refused", "5 minutes", { type: "tumbling", size: "10 minutes" });
    await expect(latenessReport(pool, p, { delaysMs: [-1] })).rejects.toThrow(
      "a delay must be a whole number of ms >= 0, got -1",
    );
    await expect(latenessReport(pool, p, { targetDropShare: 2 })).rejects.toThrow(
      "target drop share must be between 0 and 1, got 2",
    );
  });
});
