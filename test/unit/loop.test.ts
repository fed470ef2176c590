/**
 * The one wakeable loop (src/loop.ts) on vitest's fake clock: when each round starts (ms on the
 * fake clock), what it is told, the backoff after failures, wake() and stop().
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startLoop, type Loop, type RoundContext, type RoundOutcome } from "../../src/loop.js";

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

/** A round that records when it started and what it was told, and answers with `answer(n)` (n from 0). */
function recorder(answer: (n: number) => RoundOutcome | Error = () => undefined) {
  const rounds: { at: number; woken: boolean; failures: number }[] = [];
  const round = (ctx: RoundContext): RoundOutcome => {
    rounds.push({ at: Date.now(), woken: ctx.woken, failures: ctx.failures });
    const a = answer(rounds.length - 1);
    if (a instanceof Error) throw a;
    return a;
  };
  return { rounds, round, starts: () => rounds.map((r) => r.at) };
}

const noError = () => undefined;

describe("startLoop", () => {
  it("runs a round at once, then one each interval after the previous ended; stop() ends the wait", async () => {
    const r = recorder();
    const loop = startLoop(r.round, { intervalMs: 100, onError: noError });
    await vi.advanceTimersByTimeAsync(350);
    expect(r.starts()).toEqual([0, 100, 200, 300]);
    await loop.stop();
    await vi.advanceTimersByTimeAsync(1000);
    expect(r.starts()).toEqual([0, 100, 200, 300]);
  });

  it("immediate: false waits one interval first; a function interval is asked before each wait", async () => {
    const r = recorder();
    const waits = [50, 20, 200];
    let i = 0;
    const loop = startLoop(r.round, { intervalMs: () => waits[i++ % 3]!, immediate: false, onError: noError });
    await vi.advanceTimersByTimeAsync(300);
    expect(r.starts()).toEqual([50, 70, 270]);
    await loop.stop();
  });

  it("wake() during a wait starts the next round now, told woken; a wake during a round runs the next one as soon as it ends", async () => {
    let release: (() => void) | undefined;
    const rounds: { at: number; woken: boolean }[] = [];
    const loop = startLoop(
      async (ctx) => {
        rounds.push({ at: Date.now(), woken: ctx.woken });
        if (rounds.length === 2) await new Promise<void>((resolve) => (release = resolve));
      },
      { intervalMs: 1000, onError: noError },
    );
    await vi.advanceTimersByTimeAsync(30);
    loop.wake(); // during the wait after round 1: round 2 starts at 30
    await vi.advanceTimersByTimeAsync(10);
    loop.wake(); // during round 2
    await vi.advanceTimersByTimeAsync(10);
    release!(); // round 2 ends at 50: round 3 at once
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(rounds).toEqual([
      { at: 0, woken: false },
      { at: 30, woken: true },
      { at: 50, woken: true },
      { at: 1050, woken: false },
    ]);
    await loop.stop();
  });

  it("backs off after failed rounds by backoffMs(failures, backoff), tells onError and the round, resets on success", async () => {
    // Rounds 0-2 fail, 3 succeeds, 4 fails. random 0: the waits are half the step, 50 · 2^(failures-1).
    const r = recorder((n) => (n <= 2 || n === 4 ? new Error(`round ${n}`) : undefined));
    const errors: [string, number, number][] = [];
    const loop = startLoop(r.round, {
      intervalMs: 1000,
      backoff: { baseMs: 100, capMs: 150 },
      random: () => 0,
      onError: (e, f) => errors.push([(e as Error).message, f.failures, f.retryInMs]),
    });
    await vi.advanceTimersByTimeAsync(1200);
    expect(r.rounds).toEqual([
      { at: 0, woken: false, failures: 0 },
      { at: 50, woken: false, failures: 1 },
      { at: 125, woken: false, failures: 2 },
      { at: 200, woken: false, failures: 3 },
      { at: 1200, woken: false, failures: 0 },
    ]);
    // The third wait is capped: step min(150, 400) = 150, half of it 75.
    expect(errors).toEqual([
      ["round 0", 1, 50],
      ["round 1", 2, 75],
      ["round 2", 3, 75],
      ["round 4", 1, 50],
    ]);
    await loop.stop();
  });

  it("without backoff a failed round waits the interval; a wake during a failed round does not cut the wait, a wake during it does", async () => {
    const rounds: { at: number; woken: boolean; failures: number }[] = [];
    const loop: Loop = startLoop(
      async (ctx) => {
        rounds.push({ at: Date.now(), woken: ctx.woken, failures: ctx.failures });
        await Promise.resolve(); // the loop has been returned: wake it during this round
        if (rounds.length === 1) {
          loop.wake();
          throw new Error("first");
        }
      },
      { intervalMs: 100, onError: noError },
    );
    await vi.advanceTimersByTimeAsync(60);
    expect(rounds.map((r) => r.at)).toEqual([0]);
    loop.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(rounds).toEqual([
      { at: 0, woken: false, failures: 0 },
      { at: 60, woken: true, failures: 1 },
    ]);
    await loop.stop();
  });

  it("'again' runs the next round at once; 'done' ends the loop and resolves done", async () => {
    const r = recorder((n) => (n < 2 ? "again" : "done"));
    const loop = startLoop(r.round, { intervalMs: 100, onError: noError });
    let ended = false;
    void loop.done.then(() => (ended = true));
    await vi.advanceTimersByTimeAsync(0);
    expect([r.starts(), ended]).toEqual([[0, 0, 0], true]);
    await vi.advanceTimersByTimeAsync(500);
    expect(r.starts()).toEqual([0, 0, 0]);
  });

  it("stop() aborts the round's signal and resolves once the round in flight has ended; no round after it", async () => {
    let release: (() => void) | undefined;
    const seen: boolean[] = [];
    const loop = startLoop(
      async (ctx) => {
        await new Promise<void>((resolve) => (release = resolve));
        seen.push(ctx.signal.aborted);
      },
      { intervalMs: 100, onError: noError },
    );
    await vi.advanceTimersByTimeAsync(0);
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect([stopped, seen]).toEqual([false, []]);
    release!();
    await stopping;
    await vi.advanceTimersByTimeAsync(1000);
    expect([stopped, seen]).toEqual([true, [true]]);
  });
});
