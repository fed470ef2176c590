/**
 * The service's stream loop (src/stream/streamLoop.ts): woken because rows
 * landed, it streams them without scanning the landing folder first; the
 * folder is scanned at start and at most once per trigger interval.
 */
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { StreamLoop } from "../../src/stream/streamLoop.js";
import { pipeline } from "../helpers/fixtures.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the stream loop's wakes", () => {
  it("lands the folder at start; wakes 50 ms apart run batches without landing; a wake after the 1-second interval lands again", async () => {
    const p = pipeline({
      name: "loop-wakes",
      source: { format: "jsonl" },
      fields: { eventTime: "t" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
      trigger: { interval: "1 second" },
    });
    const calls: string[] = [];
    const loop = new StreamLoop(p, {
      landPending: async () => void calls.push("land"),
      runBatch: async () => {
        calls.push("batch");
        return null;
      },
      log: createLogger("silent"),
    });
    loop.start();
    await sleep(50);
    for (let i = 0; i < 3; i++) {
      loop.wake();
      await sleep(50);
    }
    // Wakes that come while a batch runs coalesce into one iteration: at least one batch per wake after the first.
    expect(calls[0]).toBe("land");
    expect(calls.filter((c) => c === "land").length).toBe(1);
    expect(calls.filter((c) => c === "batch").length).toBeGreaterThanOrEqual(2);
    const before = calls.length;
    // 1 second after the landing pass at start: the interval's own iteration lands (at about
    // 1.15 s, 1 s after the last wake's iteration), or this wake does.
    await sleep(1_000);
    loop.wake();
    await sleep(50);
    await loop.stop();
    expect(calls.slice(before, before + 2)).toEqual(["land", "batch"]);
    expect(calls.filter((c) => c === "land").length).toBe(2);
  });
});
