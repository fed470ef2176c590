/** `straggler lateness` for people: the summary line first, the per-key list cut at `--limit` with a count of the rest. */
import { describe, expect, it } from "vitest";
import type { LatenessAdvice } from "../../src/observe/latenessAdvice.js";
import { formatLatenessReport } from "../../src/cli/latenessText.js";

const outcome = {
  delayMs: 60_000,
  droppedPairs: 2,
  droppedWindows: 1,
  eventsAffected: 2,
  dropShare: 0.5,
  timeToFinal: null,
  openWindows: null,
};
const figures = { count: 4, minMs: 1_000, p50Ms: 2_000, p90Ms: 3_000, p99Ms: 3_000, p999Ms: 3_000, maxMs: 3_000 };
const report = (keys: number): LatenessAdvice => ({
  pipeline: "p",
  source: "histogram",
  range: { from: null, to: null },
  configuredDelayMs: 60_000,
  distribution: { ...figures, histogram: [{ fromMs: 1_000, toMs: 10_000, count: 4 }] },
  byKey: Array.from({ length: keys }, (_, i) => ({ groupKey: `k${i}`, ...figures })),
  whatIf: { batches: 2, rows: 4, recordedDroppedPairs: 2, delays: [{ labels: ["configured"], ...outcome }] },
  recommendation: {
    targetDropShare: 0.001,
    ...outcome,
    delayMs: 3_001,
    droppedPairs: 0,
    droppedWindows: 0,
    eventsAffected: 0,
    dropShare: 0,
  },
});

describe("formatLatenessReport", () => {
  it("puts the summary first and cuts the keys after the limit, counting the rest", () => {
    const lines = formatLatenessReport(report(5), 2).split("\n");
    expect(lines[0]).toBe("Lateness of p (ingestion time − event time) over 4 accepted rows");
    expect(lines.filter((l) => l.startsWith("  key ") || l.startsWith("  …"))).toEqual([
      '  key "k0": 4 rows, p50 2s, p99 3s, max 3s',
      '  key "k1": 4 rows, p50 2s, p99 3s, max 3s',
      "  … and 3 more keys (--limit N shows more, --json all)",
    ]);
  });

  it("shows every key within the limit, and '-' for what the histogram does not keep", () => {
    const lines = formatLatenessReport(report(2), 2).split("\n");
    expect(lines.some((l) => l.startsWith("  …"))).toBe(false);
    expect(
      lines
        .find((l) => l.includes("configured"))!
        .trim()
        .split(/\s{2,}/),
    ).toEqual(["1m", "configured", "2", "1", "2", "50.000 %", "-", "-"]);
    expect(lines.at(-2)).toBe("  0 events (0.000 %) in 0 windows");
  });
});
