import { describe, expect, it } from "vitest";
import { advanceWatermark, isLate } from "../../src/core/watermark.js";

const MIN = 60_000;

describe("advanceWatermark", () => {
  it("stays undefined (null) until a max event time exists", () => {
    expect(advanceWatermark(null, null, 10 * MIN)).toBeNull();
    expect(advanceWatermark(null, null, 0)).toBeNull();
  });

  it("is the max event time minus the delay once there is one", () => {
    expect(advanceWatermark(null, 1_000_000, 10 * MIN)).toBe(400_000);
    expect(advanceWatermark(null, 1_000_000, 0)).toBe(1_000_000);
    // Before the epoch, and going below zero by the delay.
    expect(advanceWatermark(null, 100_000, 10 * MIN)).toBe(-500_000);
    expect(advanceWatermark(null, -1, 1)).toBe(-2);
  });

  it("keeps the previous watermark when the batch has no max event time", () => {
    expect(advanceWatermark(5_000, null, 10 * MIN)).toBe(5_000);
  });

  it("moves forward when the candidate is later", () => {
    expect(advanceWatermark(5_000, 20_000, 10_000)).toBe(10_000);
    expect(advanceWatermark(-5_000, 0, 1_000)).toBe(-1_000);
  });

  it("never moves backwards", () => {
    expect(advanceWatermark(10_000, 15_000, 10_000)).toBe(10_000); // candidate 5_000 < 10_000
    expect(advanceWatermark(10_000, 20_000, 10_000)).toBe(10_000); // candidate equal
    expect(advanceWatermark(10_000, 0, 0)).toBe(10_000);
    // A larger delay on a later call cannot pull it back either.
    let wm: number | null = null;
    for (const [maxEvent, delay] of [[100, 10], [50, 0], [120, 100], [95, 0], [200, 10]] as const) wm = advanceWatermark(wm, maxEvent, delay);
    expect(wm).toBe(190);
  });
});

describe("isLate (window end <= watermark)", () => {
  it("a window ending exactly at the watermark is late", () => {
    expect(isLate(600_000, 600_000)).toBe(true);
  });

  it("a window ending 1 ms after the watermark is not late", () => {
    expect(isLate(600_001, 600_000)).toBe(false);
  });

  it("a window ending before the watermark is late", () => {
    expect(isLate(0, 600_000)).toBe(true);
    expect(isLate(-600_000, -1)).toBe(true);
  });

  it("nothing is late while the watermark is undefined", () => {
    expect(isLate(0, null)).toBe(false);
    expect(isLate(-62_135_596_800_000, null)).toBe(false);
  });
});
