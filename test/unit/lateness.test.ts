import { describe, expect, it } from "vitest";
import {
  DelayNeeds,
  DelaySimulation,
  weightedPercentile,
  windowEnds,
  type WhatIfRow,
} from "../../src/core/lateness.js";
import { shortDuration } from "../../src/observe/latenessText.js";
import { readShare } from "../../src/config/share.js";

const MIN = 60_000; // delays and sizes are ms; instants are epoch µs (bigint)
const US_PER_MIN = 60_000_000n;
const TUMBLING_10 = { sizeMs: 10 * MIN, slideMs: 10 * MIN, offsetMs: 0 };

/** A row at minute `event` that arrived at minute `arrival`. */
const row = (event: number, arrival: number, groupKey = "k", spec = TUMBLING_10): WhatIfRow => {
  const eventUs = BigInt(event) * US_PER_MIN;
  return {
    eventUs,
    ingestionUs: BigInt(arrival) * US_PER_MIN,
    groupKey,
    windowEndsUs: windowEnds(eventUs, spec),
    counted: true,
  };
};

/** Feeds `batches` (lists of rows) to every sink. */
function feed(batches: WhatIfRow[][], ...sinks: { row(r: WhatIfRow): void; endBatch(): void }[]): void {
  for (const batch of batches) {
    for (const r of batch) for (const s of sinks) s.row(r);
    for (const s of sinks) s.endBatch();
  }
}

// Batch 1: 0:05 (arr 0:06), 0:25 (arr 0:26) → max 0:25.
// Batch 2: 0:08 (arr 0:30; window [0:00,0:10)), 0:17 "b" (arr 0:31; [0:10,0:20)), 0:41 (arr 0:42) → max 0:41.
// Batch 3: 0:12 (arr 0:50; [0:10,0:20)), 0:44 (arr 0:51).
const BATCHES = [
  [row(5, 6), row(25, 26)],
  [row(8, 30), row(17, 31, "b"), row(41, 42)],
  [row(12, 50), row(44, 51)],
];

describe("DelaySimulation", () => {
  // Delay 5 minutes. Batch 2 runs under 0:25 − 5 = 0:20: [0:00,0:10) and [0:10,0:20) "b" are late (2 pairs).
  // Batch 3 runs under 0:41 − 5 = 0:36: [0:10,0:20) "k" is late. Finals: [0:00,0:10) after batch 1 (wm 0:20,
  // clock 0:26): 16 min; [0:20,0:30) after batch 2 (wm 0:36, clock 0:42): 12 min. Open after each batch:
  // {[0:20,0:30)}; {[0:40,0:50)}; {[0:40,0:50)}.
  const FIVE = {
    droppedPairs: 3,
    droppedWindows: 3,
    eventsAffected: 3,
    dropShare: 3 / 7,
    timeToFinal: { windows: 2, medianMs: 12 * MIN, p99Ms: 16 * MIN },
    openWindows: { max: 1, mean: 1 },
  };
  // Delay 30 minutes. Batch 2 under 0:25 − 30 = −0:05: nothing late. Batch 3 under 0:11: 0:12 is in [0:10,0:20), on time.
  // Finals: after batch 2 (wm 0:11) [0:00,0:10) k at clock 0:42: 32 min. Open: batch 1 [0:00) k, [0:20) k = 2;
  // batch 2 adds [0:10) b, [0:40) k = 4, then [0:00) is final = 3; batch 3 adds [0:10) k = 4.
  const THIRTY = {
    droppedPairs: 0,
    droppedWindows: 0,
    eventsAffected: 0,
    dropShare: 0,
    timeToFinal: { windows: 1, medianMs: 32 * MIN, p99Ms: 32 * MIN },
    openWindows: { max: 4, mean: 3 },
  };
  it.each([
    [5 * MIN, FIVE],
    [30 * MIN, THIRTY],
  ])("applies the watermark of earlier batches (delay %d ms)", (delayMs, expected) => {
    const sim = new DelaySimulation(delayMs, TUMBLING_10);
    feed(BATCHES, sim);
    expect(sim.result()).toEqual({ delayMs, ...expected });
  });

  it("counts only rows in the range but moves the watermark with all", () => {
    const sim = new DelaySimulation(5 * MIN, TUMBLING_10, { fromUs: 10n * US_PER_MIN, toUs: 20n * US_PER_MIN });
    feed(
      BATCHES.map((b) =>
        b.map((r) => ({ ...r, counted: r.eventUs >= 10n * US_PER_MIN && r.eventUs < 20n * US_PER_MIN })),
      ),
      sim,
    );
    const result = sim.result();
    expect([result.droppedPairs, result.eventsAffected, result.dropShare, result.timeToFinal.windows]).toEqual([
      2, 2, 1, 0,
    ]);
  });

  it("decides per window with sliding windows", () => {
    const sliding = { sizeMs: 10 * MIN, slideMs: 5 * MIN, offsetMs: 0 };
    const sim = new DelaySimulation(0, sliding);
    // 0:10 sets the watermark to 0:10; 0:07 is late for [0:00,0:10) and on time for [0:05,0:15).
    feed([[row(10, 10, "k", sliding)], [row(7, 11, "k", sliding)]], sim);
    expect([sim.result().droppedPairs, sim.result().eventsAffected]).toEqual([1, 1]);
  });
});

describe("DelayNeeds", () => {
  it("gives the smallest delay at or under a drop share", () => {
    const needs = new DelayNeeds();
    feed(BATCHES, needs);
    // Needs (ms): 0:08 → 0:25 − 0:10 = 15 min + 1 ms; 0:17 → 5 min + 1 ms; 0:12 → 0:41 − 0:20 = 21 min + 1 ms; others 0.
    expect(needs.smallestDelay(0)).toBe(21 * MIN + 1);
    expect(needs.smallestDelay(1 / 7)).toBe(15 * MIN + 1);
    expect(needs.smallestDelay(2 / 7)).toBe(5 * MIN + 1);
    expect(needs.smallestDelay(3 / 7)).toBe(0);
    // The simulation agrees at the boundaries: one ms less drops one more event.
    for (const [delayMs, affected] of [
      [21 * MIN + 1, 0],
      [21 * MIN, 1],
      [15 * MIN + 1, 1],
      [15 * MIN, 2],
      [5 * MIN + 1, 2],
      [5 * MIN, 3],
    ] as const) {
      const sim = new DelaySimulation(delayMs, TUMBLING_10);
      feed(BATCHES, sim);
      expect([delayMs, sim.result().eventsAffected]).toEqual([delayMs, affected]);
    }
  });
});

describe("weightedPercentile", () => {
  it("is nearest-rank, like percentile_disc", () => {
    const counts = new Map([
      [30, 1],
      [10, 2],
      [20, 1],
    ]);
    expect([0.25, 0.5, 0.51, 0.75, 0.99, 1].map((q) => weightedPercentile(counts, q))).toEqual([
      10, 10, 20, 20, 30, 30,
    ]);
    expect(weightedPercentile(new Map(), 0.5)).toBeNull();
  });
});

describe("shortDuration", () => {
  it("keeps the two largest units", () => {
    expect(
      [0, 950, 59_000, 587_000, 3_282_000, 84_265_000, 198_610_000, 86_400_000, -59_000, 0.4, null].map(shortDuration),
    ).toEqual(["0s", "950ms", "59s", "9m 47s", "54m 42s", "23h 24m", "2d 7h", "1d", "-59s", "0s", "-"]);
  });
});

describe("readShare: one grammar for every share (alerts, lateness --target-drop, targetDrop=)", () => {
  it("reads a percentage or a share, text or number, and refuses anything else with one message", () => {
    expect(["0.1%", "0.001", "5 %", "100%", ".5", "0", 0.25, 1].map((t) => readShare(t, "drop share"))).toEqual(
      [0.001, 0.001, 0.05, 1, 0.5, 0, 0.25, 1].map((share) => ({ ok: true, share })),
    );
    for (const bad of ["", "-1%", "101%", "1.5", "ten", "0.1%%", "1e-3", -0.1, 2]) {
      expect(readShare(bad, "drop share")).toEqual({
        ok: false,
        message: `expected a drop share like 0.1% or 0.001 (from 0 to 100%), got ${JSON.stringify(bad)}`,
      });
    }
    expect(readShare(null, "quarantine share")).toEqual({
      ok: false,
      message: "expected a quarantine share like 0.1% or 0.001 (from 0 to 100%), got null",
    });
  });
});
