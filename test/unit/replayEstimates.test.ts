/**
 * When a replay checks the pipeline's planner estimates (src/replay/spans.ts `estimatesDue`): early and then
 * every 100 spans, so that a replay into a fresh database does not MERGE its first 100 spans by hashing every
 * window of the pipeline.
 */
import { describe, expect, it } from "vitest";
import { estimatesDue } from "../../src/replay/spans.js";

describe("estimatesDue", () => {
  it("is due at spans 1, 2, 4, … 64, then at every hundredth span", () => {
    const due = Array.from({ length: 400 }, (_, i) => i + 1).filter(estimatesDue);
    expect(due).toEqual([1, 2, 4, 8, 16, 32, 64, 100, 200, 300, 400]);
  });

  it("is not due before the first span", () => {
    expect(estimatesDue(0)).toBe(false);
  });
});
