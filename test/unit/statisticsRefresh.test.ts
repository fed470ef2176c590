/**
 * The service's statistics refreshes after catch-ups (src/db/statisticsRefresh.ts): at most one start per
 * pipeline every interval, a request inside it booked for its end, none after stop.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { statisticsRefresher } from "../../src/db/statisticsRefresh.js";

describe("statisticsRefresher", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("starts one refresh per pipeline per interval; requests inside it become one at its end", async () => {
    const runs: string[] = [];
    const r = statisticsRefresher(async (p) => {
      runs.push(`${p}@${Math.round(performance.now())}`);
    }, 10_000);
    const t0 = Math.round(performance.now());
    r.request("a");
    r.request("b");
    await vi.advanceTimersByTimeAsync(1);
    // 50 catch-ups in the next 9 s: none starts, one is booked for the interval's end.
    for (let i = 0; i < 50; i++) {
      r.request("a");
      await vi.advanceTimersByTimeAsync(180);
    }
    expect(runs).toEqual([`a@${t0}`, `b@${t0}`]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs).toEqual([`a@${t0}`, `b@${t0}`, `a@${t0 + 10_000}`]);
    // Nothing asked since: nothing more.
    await vi.advanceTimersByTimeAsync(30_000);
    expect(runs.length).toBe(3);
    await r.stop();
  });

  it("runs a pipeline's refreshes one at a time, ignores a failed one, and books nothing after stop", async () => {
    let release!: () => void;
    const runs: number[] = [];
    const r = statisticsRefresher(async () => {
      runs.push(Math.round(performance.now()));
      if (runs.length === 1) await new Promise<void>((done) => (release = done));
      if (runs.length === 2) throw new Error("refused");
    }, 1_000);
    const t0 = Math.round(performance.now());
    r.request("a");
    await vi.advanceTimersByTimeAsync(5_000);
    r.request("a"); // the first still runs: dropped, not booked
    expect(runs).toEqual([t0]);
    release();
    await vi.advanceTimersByTimeAsync(1);
    r.request("a"); // past the interval: starts at once, and fails
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toEqual([t0, t0 + 5_001]);
    r.request("a"); // inside the interval: booked
    await r.stop();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(runs).toEqual([t0, t0 + 5_001]);
  });
});
