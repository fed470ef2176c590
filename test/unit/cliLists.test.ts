/** The one function every CLI command cuts its long lists with (src/cli/lists.ts) and the micro-batches' lines (src/cli/print.ts). */
import { describe, expect, it } from "vitest";
import { moreInline, moreLines } from "../../src/cli/lists.js";
import { batchesLines } from "../../src/cli/print.js";
import type { BatchProgress } from "../../src/stream/runBatch.js";

const item = (n: number) => `item ${n}`;
const items = [1, 2, 3, 4, 5];

describe("moreLines", () => {
  it("the first `limit`, then one line counting the rest, what they are and how to see more", () => {
    expect(moreLines(items, 2, item, { what: "things" })).toEqual([
      "item 1",
      "item 2",
      "  … and 3 more things (--limit N shows more, --json all)",
    ]);
    expect(moreLines(items, 0, item, { indent: "p: ", hint: "" })).toEqual(["p: … and 5 more"]);
    expect(moreLines(items, 5, item)).toEqual(items.map(item));
    expect(moreLines([], 3, item)).toEqual([]);
  });

  it("`total` counts items beyond the page given", () => {
    expect(moreLines([1, 2], 2, item, { total: 7, what: "rows" })).toEqual([
      "item 1",
      "item 2",
      "  … and 5 more rows (--limit N shows more, --json all)",
    ]);
  });

  it("`last` keeps the last item after the count; a list one longer than the limit is shown whole", () => {
    expect(moreLines(items, 2, item, { indent: "", what: "micro-batches", last: true })).toEqual([
      "item 1",
      "item 2",
      "… and 2 more micro-batches (--limit N shows more, --json all), then the last:",
      "item 5",
    ]);
    expect(moreLines(items, 4, item, { last: true })).toEqual(items.map(item));
    expect(moreLines(items, 0, item, { indent: "", last: true })).toEqual([
      "… and 4 more (--limit N shows more, --json all), then the last:",
      "item 5",
    ]);
  });

  it("moreInline: names in one line, then how many more", () => {
    expect([moreInline(["a", "b", "c"], 2), moreInline(["a", "b"], 2), moreInline(["a"], 0)]).toEqual([
      "a, b … and 1 more",
      "a, b",
      "… and 1 more",
    ]);
  });
});

describe("batchesLines", () => {
  const batch = (batchId: number, rows: number, dropped: number): BatchProgress =>
    ({
      pipeline: "shop",
      batchId,
      numInputRows: rows,
      durationMs: 5,
      processedRowsPerSecond: 200,
      nextWatermark: `2026-10-01T00:0${batchId}:00.000Z`,
      numRowsDroppedByWatermark: dropped,
      numRowsUpdated: rows,
      numRowsFinalized: 0,
      numRowsTotal: 1,
    }) as BatchProgress;
  const line = (id: number, rows: number, dropped: number) =>
    `shop batch ${id}: ${rows} rows in 5 ms (200 rows/s), watermark 2026-10-01T00:0${id}:00.000Z, numRowsDroppedByWatermark ${dropped}, numRowsUpdated ${rows}, finalized 0, numRowsTotal 1`;

  it("the summary line (batches, rows, where the watermark stands, pairs dropped), the first `limit`, how many more, the last", () => {
    const all = [batch(0, 10, 0), batch(1, 20, 1), batch(2, 30, 0), batch(3, 40, 2)];
    expect(batchesLines("shop", all, 1)).toEqual([
      "shop: 4 micro-batches, 100 rows, watermark 2026-10-01T00:03:00.000Z, 3 (event, window) pairs dropped by watermark",
      line(0, 10, 0),
      "… and 2 more micro-batches (--limit N shows more, --json all), then the last:",
      line(3, 40, 2),
    ]);
    expect(batchesLines("shop", [all[0]!], 0)).toEqual([
      "shop: 1 micro-batch, 10 rows, watermark 2026-10-01T00:00:00.000Z, 0 (event, window) pairs dropped by watermark",
      line(0, 10, 0),
    ]);
    expect(batchesLines("shop", [], 20)).toEqual(["shop: nothing new in bronze"]);
  });
});
