/**
 * Watermark and late rule, as Spark Structured Streaming defines them
 * (DESIGN §3–4).
 *
 * - The watermark used while processing batch N is
 *   `max(previous watermark, max accepted event time of batches < N − delay)`.
 *   It never moves backwards and is `null` (undefined) until a batch moved it.
 * - Spark's late rule: an (event, window) pair is dropped iff
 *   `window end <= watermark`. Decided per window, never per event.
 */

/**
 * Watermark after a batch, in epoch ms (or `null` while still undefined).
 * @param previousMs watermark before the batch, epoch ms, or null
 * @param maxEventMs max accepted event time seen so far (this batch included), epoch ms, or null
 * @param delayMs watermark delay, ms (>= 0)
 */
export function advanceWatermark(previousMs: number | null, maxEventMs: number | null, delayMs: number): number | null {
  if (maxEventMs === null) return previousMs;
  const candidate = maxEventMs - delayMs;
  return previousMs === null ? candidate : Math.max(previousMs, candidate);
}

/** Spark's late rule: `windowEndMs <= watermarkMs`. Nothing is late while the watermark is undefined. */
export function isLate(windowEndMs: number, watermarkMs: number | null): boolean {
  return watermarkMs !== null && windowEndMs <= watermarkMs;
}
