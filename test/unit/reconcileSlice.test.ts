/** The rotating slice of a sampled reconcile run (src/correction/reconcileRun.ts `nextSlice`). */
import { describe, expect, it } from "vitest";
import { nextSlice, sampleShare } from "../../src/correction/reconcileRun.js";

const EARLIEST = "2026-10-01T00:00:00.000Z";
const WATERMARK = "2026-10-01T10:00:00.000Z"; // 10 hours: a 25 % slice is 2.5 hours

describe("reconcile slices", () => {
  it("sample all: all time; N%: N/100 of the span from the cursor, wrapping at the watermark", () => {
    expect([sampleShare("all"), sampleShare("5%"), sampleShare("12.5%")]).toEqual([1, 0.05, 0.125]);
    expect(nextSlice("all", EARLIEST, WATERMARK, null)).toBeNull();
    expect(nextSlice("25%", null, null, null)).toBeNull();
    const first = nextSlice("25%", EARLIEST, WATERMARK, null);
    expect(first).toEqual({ from: EARLIEST, to: "2026-10-01T02:30:00.000Z" });
    const walk = [first!];
    for (let i = 0; i < 4; i++) walk.push(nextSlice("25%", EARLIEST, WATERMARK, walk.at(-1)!.to)!);
    expect(walk.map((s) => `${s.from.slice(11, 16)}-${s.to.slice(11, 16)}`)).toEqual([
      "00:00-02:30",
      "02:30-05:00",
      "05:00-07:30",
      "07:30-10:00",
      "00:00-02:30",
    ]);
    // The watermark moved on: the cursor continues past the old one instead of wrapping.
    expect(nextSlice("25%", EARLIEST, "2026-10-01T14:00:00.000Z", WATERMARK)).toEqual({
      from: WATERMARK,
      to: "2026-10-01T13:30:00.000Z",
    });
  });
});
