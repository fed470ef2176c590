/**
 * The one wakeable loop of the service, in pg-boss style: `while (!stopping) { try { round } catch {
 * onError, back off } ; await wake-or-interval }`. Every background loop runs on it: the stream's
 * loop per pipeline, the log consumers, the retention tick, the alert rounds, the run and replica
 * lease heartbeats, the LISTEN reconnection, the change feed's open streams.
 *
 * - A round runs at once (`immediate`, the default) or after the first interval; rounds never overlap.
 * - After a round that succeeded the loop waits `intervalMs` (measured from the round's end), or
 *   starts the next one at once when the round returned `"again"` or `wake()` was called while it
 *   ran; a round that returned `"done"` ends the loop.
 * - A round that threw counts a failure (`failures` consecutive ones, reset by the next round that
 *   succeeds), is reported to `onError` with the wait before the next round, and the loop waits
 *   `backoffMs(failures, backoff)` (src/db/retry.ts, the project's one backoff; without `backoff`,
 *   the interval). A wake during that round does not cut the backoff short; a wake during the wait does.
 * - `wake()` cuts the wait in progress short; `stop()` ends the wait, aborts `signal`, lets the round
 *   in flight finish and resolves once the loop has ended.
 */
import { backoffMs, type Backoff } from "./db/retry.js";

/** What a round asks of the loop: nothing (wait the interval), `again` (the next round at once), `done` (end the loop). */
export type RoundOutcome = void | "again" | "done";

/** What a round is told. */
export interface RoundContext {
  /** Whether `wake()` was called since the previous round began (or since the loop started). */
  woken: boolean;
  /** The rounds that failed in a row just before this one (0 after a round that succeeded). */
  failures: number;
  /** Aborted by `stop()`: a round that waits on something else ends its wait on it. */
  signal: AbortSignal;
}

export interface LoopOptions {
  /** Between the end of a round and the start of the next, ms; a function is asked before each wait. */
  intervalMs: number | (() => number);
  /** Run the first round at once (default true) or after the first interval. */
  immediate?: boolean;
  /** The wait after a failed round, `backoffMs(failures, backoff)`; without it, the interval. */
  backoff?: Backoff;
  /** Told of each failed round, with the consecutive failures so far and the wait before the next round, ms. Must not throw. */
  onError: (e: unknown, failure: { failures: number; retryInMs: number }) => void;
  /** Let the process exit while the loop waits (`timer.unref()`; default false). */
  unref?: boolean;
  /** The jitter's uniform draw in [0, 1) for `backoffMs` (default Math.random). */
  random?: () => number;
}

export interface Loop {
  /** Cuts the current wait short; while a round runs, the next one starts as soon as it ends (unless it failed). */
  wake(): void;
  /** Ends the loop: aborts the round's signal, ends the wait, and resolves once the round in flight has ended. */
  stop(): Promise<void>;
  /** Resolves when the loop has ended (after `stop()`, or a round that returned `done`). */
  readonly done: Promise<void>;
}

/**
 * Starts a loop of `round` (see the module's header).
 * @returns the loop's wake(), stop() and done
 */
export function startLoop(round: (ctx: RoundContext) => Promise<RoundOutcome> | RoundOutcome, opts: LoopOptions): Loop {
  const stopping = new AbortController();
  const intervalOf = typeof opts.intervalMs === "function" ? opts.intervalMs : () => opts.intervalMs as number;
  let woken = false;
  let failures = 0;
  let endWait: (() => void) | undefined;
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => end(), ms);
      if (opts.unref) timer.unref();
      const end = () => {
        clearTimeout(timer);
        endWait = undefined;
        resolve();
      };
      endWait = end;
    });
  const run = async (): Promise<void> => {
    if (opts.immediate === false) await wait(intervalOf());
    while (!stopping.signal.aborted) {
      const ctx: RoundContext = { woken, failures, signal: stopping.signal };
      woken = false;
      let delay: number;
      try {
        const outcome = await round(ctx);
        failures = 0;
        if (outcome === "done") return;
        if (outcome === "again" || woken) continue;
        delay = intervalOf();
      } catch (e) {
        failures++;
        delay = opts.backoff ? backoffMs(failures, opts.backoff, opts.random) : intervalOf();
        opts.onError(e, { failures, retryInMs: delay });
      }
      if (stopping.signal.aborted) return;
      await wait(delay);
    }
  };
  const done = run();
  return {
    wake() {
      woken = true;
      endWait?.();
    },
    async stop() {
      stopping.abort();
      endWait?.();
      await done;
    },
    done,
  };
}
