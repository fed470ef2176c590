/** The replay summary's `elapsed` line: a rate only over rows this run landed. */
import { describe, expect, it } from "vitest";
import { elapsedLine } from "../../src/cli/commands/replay.js";

describe("replay summary: elapsed", () => {
  it("gives the rate of the rows landed by this run", () => {
    expect(elapsedLine({ elapsedMs: 53_000, skippedBatches: 0 }, 129_956)).toBe(
      "53.0 s (129956 rows landed, 2452 rows/s end to end)",
    );
  });

  it("says a resumed replay that landed nothing landed nothing, instead of a rate", () => {
    expect(elapsedLine({ elapsedMs: 4_200, skippedBatches: 1592 }, 0)).toBe(
      "4.2 s (0 rows landed: every micro-batch was already landed (resumed))",
    );
  });

  it("counts only the new rows of a partly resumed replay", () => {
    expect(elapsedLine({ elapsedMs: 2_000, skippedBatches: 10 }, 500)).toBe(
      "2.0 s (500 rows landed, 250 rows/s end to end)",
    );
  });
});
