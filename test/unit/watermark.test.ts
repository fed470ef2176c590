import { describe, expect, it } from "vitest";
import { advanceWatermark, isLate } from "../../src/core/watermark.js";

const MIN = 60_000; // delays are ms; instants are epoch µs (bigint)
const US_PER_MIN = 60_000_000n;

describe("advanceWatermark", () => {
  it("stays undefined (null) until a max event time exists", () => {
    expect(advanceWatermark(null, null, 10 * MIN)).toBeNull();
    expect(advanceWatermark(null, null, 0)).toBeNull();
  });

  it("is the max event time minus the delay (applied in µs) once there is one", () => {
    expect(advanceWatermark(null, 1_000_000_000n, 10 * MIN)).toBe(400_000_000n);
    expect(advanceWatermark(null, 1_000_000_001n, 0)).toBe(1_000_000_001n);
    // Before the epoch, and going below zero by the delay.
    expect(advanceWatermark(null, 100_000_000n, 10 * MIN)).toBe(-500_000_000n);
    expect(advanceWatermark(null, -1n, 1)).toBe(-1_001n);
    // A microsecond instant keeps its microseconds.
    expect(advanceWatermark(null, 30n * US_PER_MIN + 123_456n, 10 * MIN)).toBe(20n * US_PER_MIN + 123_456n);
  });

  it("is exact for year-9999 instants (epoch µs beyond 2^53)", () => {
    const max = 253_402_300_799_999_999n; // 9999-12-31T23:59:59.999999Z
    expect(advanceWatermark(null, max, 10 * MIN)).toBe(max - 10n * US_PER_MIN);
  });

  it("keeps the previous watermark when the batch has no max event time", () => {
    expect(advanceWatermark(5_000n, null, 10 * MIN)).toBe(5_000n);
  });

  it("moves forward when the candidate is later", () => {
    expect(advanceWatermark(5_000_000n, 20_000_000n, 10_000)).toBe(10_000_000n);
    expect(advanceWatermark(-5_000_000n, 0n, 1_000)).toBe(-1_000_000n);
    expect(advanceWatermark(10_000_000n, 20_000_001n, 10_000)).toBe(10_000_001n); // one µs later
  });

  it("never moves backwards", () => {
    expect(advanceWatermark(10_000_000n, 15_000_000n, 10_000)).toBe(10_000_000n); // candidate 5 s < 10 s
    expect(advanceWatermark(10_000_000n, 20_000_000n, 10_000)).toBe(10_000_000n); // candidate equal
    expect(advanceWatermark(10_000_000n, 19_999_999n, 10_000)).toBe(10_000_000n); // one µs earlier
    expect(advanceWatermark(10_000n, 0n, 0)).toBe(10_000n);
    // A larger delay on a later call cannot pull it back either.
    let wm: bigint | null = null;
    for (const [maxEvent, delay] of [[100_000n, 10], [50_000n, 0], [120_000n, 100], [95_000n, 0], [200_000n, 10]] as const) wm = advanceWatermark(wm, maxEvent, delay);
    expect(wm).toBe(190_000n);
  });
});

describe("isLate (window end <= watermark)", () => {
  it("a window ending exactly at the watermark is late", () => {
    expect(isLate(600_000_000n, 600_000_000n)).toBe(true);
  });

  it("a window ending 1 µs after the watermark is not late", () => {
    expect(isLate(600_000_001n, 600_000_000n)).toBe(false);
  });

  it("a window ending before the watermark is late", () => {
    expect(isLate(0n, 600_000_000n)).toBe(true);
    expect(isLate(-600_000_000n, -1n)).toBe(true);
  });

  it("nothing is late while the watermark is undefined", () => {
    expect(isLate(0n, null)).toBe(false);
    expect(isLate(-62_135_596_800_000_000n, null)).toBe(false);
  });
});
