/**
 * The one backoff of the project, and the retry of a unit of work on the
 * database errors that mean "try again" (`isRetryable`, src/db/errors.ts).
 * Every retry loop waits `backoffMs`: this one, the bronze-append lock, the
 * lookup of a lost COMMIT's outcome, the LISTEN reconnection and the alert
 * webhook.
 */
import { isRetryable } from "./errors.js";

/** An exponential backoff: `baseMs` before the first retry, doubling, at most `capMs`. */
export interface Backoff {
  baseMs: number;
  capMs: number;
}

/**
 * The wait before retry number `attempt` (1 for the first), ms: the step
 * `d = min(capMs, baseMs · 2^(attempt-1))` with "equal jitter", uniform in
 * [d/2, d), so that many callers failing together do not retry together and
 * none retries at once.
 * @param random a uniform draw in [0, 1) (Math.random; a fixed one in tests)
 */
export function backoffMs(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const step = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  return step / 2 + random() * (step / 2);
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `withRetry`'s backoff: 50 ms doubling, at most 5 s. */
const RETRY_BACKOFF: Backoff = { baseMs: 50, capMs: 5_000 };

/**
 * Runs `fn` up to `attempts` times while it fails with a retryable error
 * (serialization failure, deadlock, lock not available, unique violation),
 * waiting `backoffMs(i, RETRY_BACKOFF)` before retry i.
 * @returns what `fn` returns
 * @throws the last error when it is not retryable or `attempts` are used up
 */
export async function withRetry<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= attempts || !isRetryable(e)) throw e;
      await sleep(backoffMs(i, RETRY_BACKOFF));
    }
  }
}
