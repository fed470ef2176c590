import { describe, expect, it } from "vitest";
import { formatInstant, isoToUs } from "../../src/core/instants.js";
import {
  assignWindows,
  describeCalendar,
  windowsPerEvent,
  type FixedWindowSpec as WindowSpec,
} from "../../src/core/windows.js";

const MIN = 60_000;
const HOUR = 60 * MIN;
/** Epoch µs of an ISO UTC instant. */
const t = (iso: string) => isoToUs(iso);
/** Epoch µs of a number of ms. */
const us = (ms: number) => BigInt(ms) * 1000n;
/** Windows rendered as ISO pairs, for readable expectations. */
const iso = (ws: { startUs: bigint; endUs: bigint }[]) =>
  ws.map((w) => [formatInstant(w.startUs), formatInstant(w.endUs)]);
const tumbling = (sizeMs: number, offsetMs = 0): WindowSpec => ({ sizeMs, slideMs: sizeMs, offsetMs });
const sliding = (sizeMs: number, slideMs: number, offsetMs = 0): WindowSpec => ({ sizeMs, slideMs, offsetMs });

describe("assignWindows: tumbling", () => {
  const spec = tumbling(10 * MIN);

  it("puts an event exactly on a boundary into the window that starts there (half-open)", () => {
    expect(iso(assignWindows(t("2024-05-01T12:10:00.000Z"), spec))).toEqual([
      ["2024-05-01T12:10:00.000Z", "2024-05-01T12:20:00.000Z"],
    ]);
  });

  it("puts the last microsecond before a boundary into the earlier window, the boundary itself into the next", () => {
    expect(iso(assignWindows(t("2024-01-15T12:09:59.999999Z"), spec))).toEqual([
      ["2024-01-15T12:00:00.000Z", "2024-01-15T12:10:00.000Z"],
    ]);
    expect(iso(assignWindows(t("2024-01-15T12:10:00.000000Z"), spec))).toEqual([
      ["2024-01-15T12:10:00.000Z", "2024-01-15T12:20:00.000Z"],
    ]);
    expect(assignWindows(-1n, spec)).toEqual([{ startUs: -600_000_000n, endUs: 0n }]);
    expect(assignWindows(599_999_999n, spec)).toEqual([{ startUs: 0n, endUs: 600_000_000n }]);
    // Year 9999: epoch µs beyond 2^53, exact as bigint.
    expect(iso(assignWindows(t("9999-12-31T23:59:59.999999Z"), spec))).toEqual([
      ["9999-12-31T23:50:00.000Z", "+010000-01-01T00:00:00.000Z"],
    ]);
  });

  it("puts the last millisecond before a boundary into the earlier window", () => {
    expect(iso(assignWindows(t("2024-05-01T12:09:59.999Z"), spec))).toEqual([
      ["2024-05-01T12:00:00.000Z", "2024-05-01T12:10:00.000Z"],
    ]);
    expect(iso(assignWindows(t("2024-05-01T12:19:59.999Z"), spec))).toEqual([
      ["2024-05-01T12:10:00.000Z", "2024-05-01T12:20:00.000Z"],
    ]);
  });

  it("returns epoch microseconds", () => {
    expect(assignWindows(us(1_000), spec)).toEqual([{ startUs: us(0), endUs: us(600_000) }]);
    expect(assignWindows(us(600_000), spec)).toEqual([{ startUs: us(600_000), endUs: us(1_200_000) }]);
    expect(assignWindows(us(0), spec)).toEqual([{ startUs: us(0), endUs: us(600_000) }]);
  });

  it("floors negative epoch times (before 1970) towards minus infinity", () => {
    expect(assignWindows(us(-1), spec)).toEqual([{ startUs: us(-600_000), endUs: us(0) }]);
    expect(assignWindows(us(-600_000), spec)).toEqual([{ startUs: us(-600_000), endUs: us(0) }]);
    expect(assignWindows(us(-600_001), spec)).toEqual([{ startUs: us(-1_200_000), endUs: us(-600_000) }]);
    expect(iso(assignWindows(t("1969-07-20T20:17:40.000Z"), spec))).toEqual([
      ["1969-07-20T20:10:00.000Z", "1969-07-20T20:20:00.000Z"],
    ]);
    expect(iso(assignWindows(t("0001-01-01T00:00:00.000Z"), tumbling(HOUR)))).toEqual([
      ["0001-01-01T00:00:00.000Z", "0001-01-01T01:00:00.000Z"],
    ]);
    expect(iso(assignWindows(t("1900-02-28T23:59:59.999Z"), tumbling(24 * HOUR)))).toEqual([
      ["1900-02-28T00:00:00.000Z", "1900-03-01T00:00:00.000Z"],
    ]);
  });

  it("shifts windows by the start offset (Spark's startTime)", () => {
    const hourAtQuarterPast = tumbling(HOUR, 15 * MIN);
    expect(iso(assignWindows(t("2024-05-01T12:14:59.999Z"), hourAtQuarterPast))).toEqual([
      ["2024-05-01T11:15:00.000Z", "2024-05-01T12:15:00.000Z"],
    ]);
    expect(iso(assignWindows(t("2024-05-01T12:15:00.000Z"), hourAtQuarterPast))).toEqual([
      ["2024-05-01T12:15:00.000Z", "2024-05-01T13:15:00.000Z"],
    ]);
    expect(iso(assignWindows(t("1969-12-31T23:00:00.000Z"), hourAtQuarterPast))).toEqual([
      ["1969-12-31T22:15:00.000Z", "1969-12-31T23:15:00.000Z"],
    ]);
    // A day starting at 05:00 UTC (e.g. midnight in New York in winter).
    expect(iso(assignWindows(t("2024-01-15T04:59:59.999Z"), tumbling(24 * HOUR, 5 * HOUR)))).toEqual([
      ["2024-01-14T05:00:00.000Z", "2024-01-15T05:00:00.000Z"],
    ]);
  });

  it("treats offsets that differ by a whole slide as the same alignment", () => {
    const at = t("2024-05-01T12:40:00.000Z");
    const expected = [["2024-05-01T12:15:00.000Z", "2024-05-01T13:15:00.000Z"]];
    expect(iso(assignWindows(at, tumbling(HOUR, 15 * MIN)))).toEqual(expected);
    expect(iso(assignWindows(at, tumbling(HOUR, -45 * MIN)))).toEqual(expected);
    expect(iso(assignWindows(at, tumbling(HOUR, 75 * MIN)))).toEqual(expected);
  });
});

describe("assignWindows: sliding", () => {
  it("size 10m slide 5m gives two windows, oldest first", () => {
    const spec = sliding(10 * MIN, 5 * MIN);
    expect(iso(assignWindows(t("2024-05-01T12:07:00.000Z"), spec))).toEqual([
      ["2024-05-01T12:00:00.000Z", "2024-05-01T12:10:00.000Z"],
      ["2024-05-01T12:05:00.000Z", "2024-05-01T12:15:00.000Z"],
    ]);
    expect(iso(assignWindows(t("2024-05-01T12:05:00.000Z"), spec))).toEqual([
      ["2024-05-01T12:00:00.000Z", "2024-05-01T12:10:00.000Z"],
      ["2024-05-01T12:05:00.000Z", "2024-05-01T12:15:00.000Z"],
    ]);
    expect(iso(assignWindows(t("2024-05-01T12:04:59.999Z"), spec))).toEqual([
      ["2024-05-01T11:55:00.000Z", "2024-05-01T12:05:00.000Z"],
      ["2024-05-01T12:00:00.000Z", "2024-05-01T12:10:00.000Z"],
    ]);
    expect(assignWindows(us(-1), spec)).toEqual([
      { startUs: us(-600_000), endUs: us(0) },
      { startUs: us(-300_000), endUs: us(300_000) },
    ]);
  });

  it("size 10m slide 3m gives four windows on a slide boundary and three between", () => {
    const spec = sliding(10 * MIN, 3 * MIN);
    // Starts are multiples of 3 minutes since the epoch; every whole hour is one.
    expect(iso(assignWindows(t("2024-05-01T12:00:00.000Z"), spec))).toEqual([
      ["2024-05-01T11:51:00.000Z", "2024-05-01T12:01:00.000Z"],
      ["2024-05-01T11:54:00.000Z", "2024-05-01T12:04:00.000Z"],
      ["2024-05-01T11:57:00.000Z", "2024-05-01T12:07:00.000Z"],
      ["2024-05-01T12:00:00.000Z", "2024-05-01T12:10:00.000Z"],
    ]);
    // 11:51 + 10m = 12:01 is excluded (half-open): only three windows contain 12:01.
    expect(iso(assignWindows(t("2024-05-01T12:01:00.000Z"), spec))).toEqual([
      ["2024-05-01T11:54:00.000Z", "2024-05-01T12:04:00.000Z"],
      ["2024-05-01T11:57:00.000Z", "2024-05-01T12:07:00.000Z"],
      ["2024-05-01T12:00:00.000Z", "2024-05-01T12:10:00.000Z"],
    ]);
    expect(iso(assignWindows(t("2024-05-01T12:00:59.999Z"), spec))).toEqual([
      ["2024-05-01T11:51:00.000Z", "2024-05-01T12:01:00.000Z"],
      ["2024-05-01T11:54:00.000Z", "2024-05-01T12:04:00.000Z"],
      ["2024-05-01T11:57:00.000Z", "2024-05-01T12:07:00.000Z"],
      ["2024-05-01T12:00:00.000Z", "2024-05-01T12:10:00.000Z"],
    ]);
  });

  it("size 10m slide 3m with a 1m offset", () => {
    expect(iso(assignWindows(t("2024-05-01T12:01:00.000Z"), sliding(10 * MIN, 3 * MIN, MIN)))).toEqual([
      ["2024-05-01T11:52:00.000Z", "2024-05-01T12:02:00.000Z"],
      ["2024-05-01T11:55:00.000Z", "2024-05-01T12:05:00.000Z"],
      ["2024-05-01T11:58:00.000Z", "2024-05-01T12:08:00.000Z"],
      ["2024-05-01T12:01:00.000Z", "2024-05-01T12:11:00.000Z"],
    ]);
  });

  it("agrees with a brute-force enumeration of aligned windows", () => {
    // mulberry32 with a fixed seed: deterministic, but covers many phases of event vs. slide.
    let seed = 12345;
    const next = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
      return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
    };
    const specs = [
      sliding(10 * MIN, 3 * MIN, 7_000),
      sliding(HOUR, 7 * MIN, -13 * MIN),
      sliding(7, 2, 1),
      sliding(10 * MIN, 5 * MIN),
      tumbling(15 * MIN, 5 * MIN),
    ];
    for (const spec of specs) {
      for (let n = 0; n < 300; n++) {
        // Microsecond instants over ±63 years around 1970, and some whole milliseconds.
        const event = BigInt(Math.round((next() - 0.5) * 4e15)) * (n % 3 === 0 ? 1000n : 1n);
        const size = us(spec.sizeMs),
          slide = us(spec.slideMs),
          offset = us(spec.offsetMs);
        const expected: { startUs: bigint; endUs: bigint }[] = [];
        const d = event - size - offset;
        const k0 = d / slide - (d % slide < 0n ? 1n : 0n);
        for (let k = k0; k <= k0 + BigInt(Math.ceil(spec.sizeMs / spec.slideMs)) + 2n; k++) {
          const start = k * slide + offset;
          if (start <= event && event < start + size) expected.push({ startUs: start, endUs: start + size });
        }
        expect(assignWindows(event, spec), `event ${event} spec ${JSON.stringify(spec)}`).toEqual(expected);
      }
    }
  });
});

describe("windowsPerEvent", () => {
  it("is ceil(size / slide)", () => {
    expect(windowsPerEvent(tumbling(10 * MIN))).toBe(1);
    expect(windowsPerEvent(sliding(10 * MIN, 5 * MIN))).toBe(2);
    expect(windowsPerEvent(sliding(10 * MIN, 3 * MIN))).toBe(4);
  });
});

describe("assignWindows: invalid specs", () => {
  it("refuses a slide larger than the size", () => {
    expect(() => assignWindows(us(0), sliding(5 * MIN, 10 * MIN))).toThrow(RangeError);
    expect(() => assignWindows(us(0), sliding(5 * MIN, 10 * MIN))).toThrow("window slide must be <= window size");
  });

  it("refuses a zero, negative or NaN size or slide", () => {
    expect(() => assignWindows(us(0), tumbling(0))).toThrow(RangeError);
    expect(() => assignWindows(us(0), sliding(0, 0))).toThrow("window size and slide must be > 0 ms");
    expect(() => assignWindows(us(0), sliding(10 * MIN, 0))).toThrow(RangeError);
    expect(() => assignWindows(us(0), tumbling(-MIN))).toThrow(RangeError);
    expect(() => assignWindows(us(0), tumbling(Number.NaN))).toThrow(RangeError);
  });
});

describe("describeCalendar", () => {
  it("says a calendar shape in words", () => {
    const cal = (unit: "day" | "week" | "month", span: number, weekStart = 1) => ({
      calendar: { unit, span, timeZone: "America/New_York", weekStart },
    });
    expect(describeCalendar(cal("day", 1))).toBe("1 day in America/New_York");
    expect(describeCalendar(cal("day", 7))).toBe("7 days every day in America/New_York");
    expect(describeCalendar(cal("week", 1, 7))).toBe("1 week from Sunday in America/New_York");
    expect(describeCalendar(cal("month", 3))).toBe("3 months every month in America/New_York");
  });
});
