/**
 * Watermark and late rule, as Spark Structured Streaming defines them
 * (DESIGN §3–4). Instants are epoch microseconds (`bigint`), as stored.
 *
 * - The watermark used while processing batch N is
 *   `max(previous watermark, max accepted event time of batches < N − delay)`.
 *   It never moves backwards and is `null` (undefined) until a batch moved it.
 * - Spark's late rule: an (event, window) pair is dropped iff
 *   `window end <= watermark`. Decided per window, never per event.
 */

/**
 * Watermark after a batch, in epoch µs (or `null` while still undefined).
 * @param previousUs watermark before the batch, epoch µs, or null
 * @param maxEventUs max accepted event time seen so far (this batch included), epoch µs, or null
 * @param delayMs watermark delay, whole ms (>= 0), applied in µs
 */
export function advanceWatermark(previousUs: bigint | null, maxEventUs: bigint | null, delayMs: number): bigint | null {
  if (maxEventUs === null) return previousUs;
  const candidate = maxEventUs - BigInt(delayMs) * 1000n;
  return previousUs === null || candidate > previousUs ? candidate : previousUs;
}

/** Spark's late rule: `windowEndUs <= watermarkUs` (epoch µs). Nothing is late while the watermark is undefined. */
export function isLate(windowEndUs: bigint, watermarkUs: bigint | null): boolean {
  return watermarkUs !== null && windowEndUs <= watermarkUs;
}
