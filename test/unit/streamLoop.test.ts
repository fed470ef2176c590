/**
 * The service's stream loop (src/stream/streamLoop.ts): woken because rows
 * landed, it streams them without scanning the landing folder first; the
 * folder is scanned at start and at most once per trigger interval. A wake
 * while the pipeline's next landing is in flight in this process waits for
 * that landing (at most 25 ms), so one batch takes both.
 */
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { StreamLoop } from "../../src/stream/streamLoop.js";
import { pipeline } from "../helpers/fixtures.js";
import { waitFor } from "../helpers/service.js";

/** A pipeline streamed by a loop whose trigger interval is 5 s. */
const loopPipeline = (name: string) =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventTime: "t" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    trigger: { interval: "5 seconds" },
  });

describe("the stream loop's wakes", () => {
  it("lands the folder at start; wakes run batches without landing; the interval's iteration (5 s) lands again", async () => {
    const p = loopPipeline("loop-wakes");
    const calls: string[] = [];
    const loop = new StreamLoop(p, {
      landPending: async () => void calls.push("land"),
      runBatch: async () => {
        calls.push("batch");
        return null;
      },
      log: createLogger("silent"),
    });
    const count = (c: string) => calls.filter((x) => x === c).length;
    loop.start();
    await waitFor("the loop's first iteration", async () => (count("batch") >= 1 ? true : undefined));
    for (let i = 0; i < 3; i++) {
      const batches = count("batch");
      loop.wake();
      await waitFor(`the batch of wake ${i + 1}`, async () => (count("batch") > batches ? true : undefined));
    }
    // Each wake streams without landing: the folder was landed at start and the interval has not passed.
    expect(calls[0]).toBe("land");
    expect(count("land")).toBe(1);
    expect(count("batch")).toBe(4);
    const before = calls.length;
    // The interval's own iteration lands the folder again, then streams.
    await waitFor(
      "the interval's iteration to land and stream",
      async () => (count("land") === 2 && calls.lastIndexOf("batch") > calls.lastIndexOf("land") ? true : undefined),
      60_000,
    );
    await loop.stop();
    expect(calls.slice(before, before + 2)).toEqual(["land", "batch"]);
    expect(count("land")).toBe(2);
  });

  it("a wake while a landing of the pipeline is in flight here waits for it (one batch for both), at most 25 ms", async () => {
    const p = loopPipeline("loop-coalesce");
    const calls: string[] = [];
    let inFlight: Promise<void> | undefined;
    const loop = new StreamLoop(p, {
      landPending: async () => undefined,
      runBatch: async () => {
        calls.push("batch");
        return null;
      },
      landingInFlight: () => inFlight,
      log: createLogger("silent"),
    });
    loop.start();
    await waitFor("the loop's first iteration", async () => (calls.length >= 1 ? true : undefined));
    // A landing in flight that commits after the wake: the batch comes after it.
    let commit!: () => void;
    inFlight = new Promise<void>((r) => (commit = () => (calls.push("committed"), r())));
    loop.wake();
    await new Promise((r) => setTimeout(r, 5));
    commit();
    await waitFor("the wake's batch", async () => (calls.length >= 3 ? true : undefined));
    expect(calls).toEqual(["batch", "committed", "batch"]);
    // A landing that does not end: the batch does not wait for it longer than 25 ms.
    inFlight = new Promise<void>(() => undefined);
    const woken = performance.now();
    loop.wake();
    await waitFor("the bounded wait's batch", async () => (calls.length >= 4 ? true : undefined));
    const waited = performance.now() - woken;
    await loop.stop();
    expect([waited >= 20, waited < 4_000]).toEqual([true, true]);
  });
});
