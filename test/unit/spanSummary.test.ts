/**
 * A landing's rows summarized as they are classified (src/core/spanSummary.ts), against the windows
 * `assignWindows` gives and the aggregates `aggregate` computes (src/core/exactAggregate.ts, PostgreSQL's rules):
 * the same windows, counts, exact sums (numbers past 2^53 included), min and max, and each window's rows by place;
 * unusable for what it does not sum (another window kind, a value with an exponent, more rows than one batch).
 */
import { describe, expect, it } from "vitest";
import type { BronzeRow } from "../../src/core/admission.js";
import { aggregate } from "../../src/core/exactAggregate.js";
import {
  addToSummary,
  eventSum,
  summaryOf,
  summaryWindows,
  windowSum,
  epochSecondsText,
} from "../../src/core/spanSummary.js";
import { assignWindows, type FixedWindowSpec } from "../../src/core/windows.js";

const T0 = BigInt(Date.UTC(2026, 9, 1, 12)) * 1000n;

const row = (t: bigint, groupKey: string, value: string | null, accepted = true): BronzeRow => ({
  eventId: `${t}`,
  line: 1,
  raw: "",
  eventTimeUs: accepted ? t : null,
  ingestionTimeUs: t + 5n,
  groupKey,
  value,
  status: accepted ? "accepted" : "quarantined",
  reason: null,
  detail: null,
});

/** A small deterministic generator (mulberry32). */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("a landing's rows summarized", () => {
  for (const spec of [
    { sizeMs: 600_000, slideMs: 600_000, offsetMs: 0 },
    { sizeMs: 600_000, slideMs: 240_000, offsetMs: 60_000 },
    { sizeMs: 3_600_000, slideMs: 900_000, offsetMs: -300_000 },
  ] satisfies FixedWindowSpec[]) {
    it(`matches assignWindows and the exact aggregates, window by window (size ${spec.sizeMs}, slide ${spec.slideMs}, offset ${spec.offsetMs})`, () => {
      const next = random(spec.slideMs);
      const values = [
        () => (Math.floor(next() * 2e6) / 100 - 1e4).toFixed(2),
        () => String(Math.floor(next() * 1e3) - 500),
        () =>
          `${Math.floor(next() * 1e9)}${Math.floor(next() * 1e9)}${Math.floor(next() * 1e9)}.${Math.floor(next() * 1e3)}`,
        () => `-0.${Math.floor(next() * 1e6)}`,
        () => "8999999999999999.9",
      ];
      const s = summaryOf(spec, 10_000);
      const expected = new Map<string, { values: string[]; rows: number[] }>();
      for (let i = 0; i < 3000; i++) {
        const t = T0 + BigInt(Math.floor(next() * 7_200_000_000)) - 3_600_000_000n;
        const accepted = next() > 0.05;
        const r = row(t, `k${Math.floor(next() * 4)}`, values[Math.floor(next() * values.length)]!(), accepted);
        addToSummary(s, r);
        if (!accepted) continue;
        for (const w of assignWindows(t, spec)) {
          const id = `${r.groupKey}|${w.startUs}|${w.endUs}`;
          const e = expected.get(id) ?? { values: [], rows: [] };
          e.values.push(r.value!);
          e.rows.push(i);
          expected.set(id, e);
        }
      }
      expect(s.unusable).toBeNull();
      const got = new Map(
        [...summaryWindows(s)].map((w) => [
          `${w.groupKey}|${w.startUs}|${w.endUs}`,
          { n: w.n, sum: windowSum(w), min: w.min, max: w.max, rows: w.rows },
        ]),
      );
      const want = new Map(
        [...expected].map(([id, e]) => {
          const a = aggregate(e.values);
          return [id, { n: a.count, sum: a.sum, min: a.min, max: a.max, rows: e.rows }];
        }),
      );
      expect(got).toEqual(want);
    });
  }

  it("keeps the event and ingestion times: least, greatest, the sum for the average (seconds with six decimals)", () => {
    const s = summaryOf({ sizeMs: 60_000, slideMs: 60_000, offsetMs: 0 }, 10);
    addToSummary(s, row(T0 + 7n, "a", "1"));
    addToSummary(s, row(T0 - 3n, "a", "2"));
    addToSummary(s, row(T0 + 100n, "b", "3", false));
    expect([s.rows, s.accepted, s.minEventUs, s.maxEventUs, s.maxIngestionUs]).toEqual([
      3,
      2,
      T0 - 3n,
      T0 + 7n,
      T0 + 12n,
    ]);
    expect(epochSecondsText(eventSum(s))).toBe(`${(2n * T0 + 4n) / 1_000_000n}.000004`);
    // Times centuries apart (their distance past 2^53 µs): the sum still exact.
    const far = summaryOf({ sizeMs: 60_000, slideMs: 60_000, offsetMs: 0 }, 10);
    for (const t of [-8_000_000_000_000_001n, 8_000_000_000_000_003n, 8_000_000_000_000_005n, 7n])
      addToSummary(far, row(t, "a", "1"));
    expect(eventSum(far)).toBe(8_000_000_000_000_014n);
    expect(epochSecondsText(-1_500_000n)).toBe("-1.500000");
    expect(epochSecondsText(42n)).toBe("0.000042");
  });

  it("of two equal values keeps the later text, as min() and max() over numeric do; no values: count only", () => {
    const s = summaryOf({ sizeMs: 60_000, slideMs: 60_000, offsetMs: 0 }, 10);
    for (const v of ["7.5", "7.50", "-1", "-1.0", "7.500"]) addToSummary(s, row(T0, "a", v));
    addToSummary(s, row(T0, "n", null));
    const [a, n] = [...summaryWindows(s)];
    expect([a!.n, windowSum(a!), a!.min, a!.max]).toEqual([5, "20.500", "-1.0", "7.500"]);
    expect([n!.n, windowSum(n!), n!.min, n!.max]).toEqual([1, null, null, null]);
  });

  it("is unusable for what it does not sum: calendar or session windows, a value with an exponent or a plus sign, more rows than one batch", () => {
    expect(summaryOf({ calendar: { unit: "day", span: 1, timeZone: "UTC", weekStart: 1 } }, 10).unusable).toBe(
      "not fixed-length windows",
    );
    expect(summaryOf({ sessionGapMs: 60_000 }, 10).unusable).toBe("not fixed-length windows");
    for (const v of ["1e3", "+5", ".5", "5."]) {
      const s = summaryOf({ sizeMs: 60_000, slideMs: 60_000, offsetMs: 0 }, 10);
      addToSummary(s, row(T0, "a", "1"));
      addToSummary(s, row(T0, "a", v));
      expect([s.unusable, s.windows.size]).toEqual(["a value that is not a plain decimal", 0]);
    }
    const s = summaryOf({ sizeMs: 60_000, slideMs: 60_000, offsetMs: 0 }, 2);
    for (let i = 0; i < 3; i++) addToSummary(s, row(T0, "a", "1"));
    expect(s.unusable).toBe("more rows than one micro-batch");
  });
});
