/**
 * Retries a unit of work on the PostgreSQL errors that mean "try again":
 * serialization failure, deadlock, lock not available, and a unique
 * violation from a concurrent insert of the same key. None of them may
 * escape to a caller while a retry can succeed.
 */
export const PgError = {
  UNIQUE_VIOLATION: "23505",
  SERIALIZATION_FAILURE: "40001",
  DEADLOCK_DETECTED: "40P01",
  LOCK_NOT_AVAILABLE: "55P03",
} as const;

const RETRYABLE = new Set<string>(Object.values(PgError));

export function isRetryable(e: unknown): boolean {
  return typeof e === "object" && e !== null && RETRYABLE.has((e as { code?: string }).code ?? "");
}

/**
 * The wait before retry number `attempt` (1 for the first), ms: exponential from
 * `baseMs`, capped at `capMs`, with "full jitter" (uniform in [0, that]) so that
 * many callers failing together do not retry together.
 */
export function backoffMs(attempt: number, baseMs = 50, capMs = 5_000): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** (attempt - 1));
}

/** Runs `fn` up to `attempts` times, backing off 50 ms, 100 ms, … between retryable failures. */
export async function withRetry<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= attempts || !isRetryable(e)) throw e;
      await new Promise((r) => setTimeout(r, 50 * 2 ** (i - 1)));
    }
  }
}
