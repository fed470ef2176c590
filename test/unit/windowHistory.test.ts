/**
 * The pure parts of a window's history (src/core/windowHistory.ts, exactAggregate.ts): exact
 * decimal aggregates as PostgreSQL's `sum(numeric)` gives them, and the revisions of a window
 * under a hold a micro-batch's rule tripped (the hold comes before that batch's MERGE).
 */
import { describe, expect, it } from "vitest";
import { aggregate } from "../../src/core/exactAggregate.js";
import { windowHistory, type HistoryBatch, type HistoryEvent } from "../../src/core/windowHistory.js";

describe("aggregate", () => {
  it("sums exactly at the largest scale of its terms, keeps min and max as written, counts nulls", () => {
    expect(aggregate(["1.50", "2", "-0.25"])).toEqual({ count: 3, sum: "3.25", min: "-0.25", max: "2" });
    expect(aggregate(["0.1", "0.2"])).toEqual({ count: 2, sum: "0.3", min: "0.1", max: "0.2" });
    expect(aggregate(["-0.5", "0.25"])).toEqual({ count: 2, sum: "-0.25", min: "-0.5", max: "0.25" });
    expect(aggregate(["99999999999999999999.000001", "1"])).toEqual({
      count: 2,
      sum: "100000000000000000000.000001",
      min: "1",
      max: "99999999999999999999.000001",
    });
    expect(aggregate([null, "5", null])).toEqual({ count: 3, sum: "5", min: "5", max: "5" });
    expect(aggregate([null])).toEqual({ count: 1, sum: null, min: null, max: null });
  });
});

describe("windowHistory", () => {
  const ev = (seq: number, minute: number, value: string): HistoryEvent => ({
    seq,
    eventId: `e${seq}`,
    eventTime: `2026-10-01T12:0${minute}:00.000Z`,
    ingestionTime: "2026-10-01T12:30:00.000Z",
    landedAt: "2026-10-01T12:30:00.000Z",
    value,
    supersededBy: null,
  });
  const batch = (
    batchId: number,
    startOffset: number,
    endOffset: number,
    watermark: string | null,
    nextWatermark: string | null,
    at: string,
  ): HistoryBatch => ({ batchId, startOffset, endOffset, watermark, nextWatermark, at });

  it("a rule's hold tripped by micro-batch 1 keeps what micro-batch 0 published; micro-batch 1 and 2 are listed unpublished until the release", () => {
    const h = windowHistory({
      windowEnd: "2026-10-01T12:10:00.000Z",
      events: [ev(1, 1, "10"), ev(2, 2, "5"), ev(3, 3, "1")],
      batches: [
        batch(0, 0, 1, null, "2026-10-01T12:00:00.000Z", "2026-10-01T13:00:00.000Z"),
        batch(1, 1, 2, "2026-10-01T12:00:00.000Z", "2026-10-01T12:01:00.000Z", "2026-10-01T13:01:00.000Z"),
        batch(2, 2, 3, "2026-10-01T12:01:00.000Z", "2026-10-01T12:20:00.000Z", "2026-10-01T13:02:00.000Z"),
      ],
      corrections: [],
      holds: [
        {
          holdId: 7,
          reason: "FUTURE_TS rows",
          rule: "onFutureTs",
          batchId: 1,
          heldAt: "2026-10-01T13:01:00.010Z",
          releasedAt: "2026-10-01T13:05:00.000Z",
        },
      ],
      cutover: undefined,
      now: { count: 3, sum: "16", min: "1", max: "10" },
    });
    expect(
      h.revisions.map((r) => [r.cause.kind, r.before?.sum ?? null, r.after?.sum ?? null, r.status, r.published]),
    ).toEqual([
      ["micro-batch", null, "10", "open", true],
      ["hold", "10", "10", "open", true],
      ["micro-batch", "10", "15", "open", false],
      ["micro-batch", "15", "16", "final", false],
      ["release", "10", "16", "final", true],
    ]);
    expect(h.lateEvents).toEqual([]);
  });
});
