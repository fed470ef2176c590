/**
 * The replay's check pass in two halves (src/replay/checkOrder.ts): the same spans and counts as one pass,
 * a file out of order at the split or inside either half refused, and a quoted field spanning the split
 * checked whole instead.
 */
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { checkOrder } from "../../src/replay/checkOrder.js";
import { pipeline } from "../helpers/fixtures.js";

const HEADER = "id,event_time,arrived,note";
const p = pipeline({
  name: "check",
  source: { format: "csv" },
  fields: { eventId: "id", eventTime: "event_time" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "10 minutes" },
});
const HOUR = 3_600_000;
const T0 = Date.UTC(2024, 0, 15, 12);

/** `n` records a minute apart, in arrival order; `edit` may change them. */
function rows(n: number, edit: (r: string[]) => void = () => {}): string[] {
  const r = Array.from({ length: n }, (_, i) => {
    const at = new Date(T0 + i * 60_000).toISOString();
    return `e${i},${at},${at},n${i}`;
  });
  edit(r);
  return r;
}

async function check(lines: string[], parallel: boolean) {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-check-"));
  const file = path.join(dir, "f.csv");
  writeFileSync(file, [HEADER, ...lines].join("\n") + "\n");
  const headers = new Set<string>();
  const staged: number[] = [];
  const opts = {
    files: [file],
    arrivalField: "arrived",
    batchSpanMs: HOUR,
    onStaged: (n: number) => staged.push(n),
    checkOnBytes: false,
  };
  const r = await checkOrder(p, opts, file, statSync(file).size, headers, parallel);
  return { r, headers: [...headers], staged: staged.at(-1) };
}

describe("the replay's check pass in two halves", () => {
  it("counts the same spans and records as one pass, the span at the split counted once", async () => {
    const lines = rows(150);
    const one = await check(lines, false);
    const two = await check(lines, true);
    expect(two).toEqual(one);
    expect(two.r).toEqual({
      spans: [
        { start: T0, rows: 60 },
        { start: T0 + HOUR, rows: 60 },
        { start: T0 + 2 * HOUR, rows: 30 },
      ],
      total: 150,
    });
    expect([two.headers, two.staged]).toEqual([[HEADER], 150]);
  });

  it("refuses a file that goes back in time at the split, in the first half or in the second", async () => {
    const back = (i: number) => (r: string[]) => {
      // Record i arrives a minute before the one ahead of it.
      const at = new Date(T0 + (i - 2) * 60_000).toISOString();
      r[i] = `e${i},${at},${at},back`;
    };
    for (const i of [10, 75, 76, 140]) {
      expect((await check(rows(150, back(i)), true)).r).toBeNull();
      expect((await check(rows(150, back(i)), false)).r).toBeNull();
    }
  });

  it("checks the file whole when a quoted field spans the split: the same result as one pass", async () => {
    // A note of 4,000 lines: the middle of the file falls inside it.
    const lines = rows(150, (r) => {
      r[74] = r[74]!.replace(/n74$/, `"${"line\n".repeat(4000)}end"`);
    });
    const one = await check(lines, false);
    const two = await check(lines, true);
    expect(two).toEqual(one);
    expect(two.r?.total).toBe(150);
  });
});
