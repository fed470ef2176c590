/**
 * Window assignment — the pure rule the stream's SQL implements (see
 * `src/stream/batchSql.ts`, cross-checked by `test/integration/windowSql.test.ts`).
 *
 * Windows are half-open `[start, end)`, aligned to the Unix epoch in UTC and
 * shifted by an optional start offset, exactly like Spark's
 * `window(timeColumn, windowDuration, slideDuration, startTime)`.
 * A tumbling window is a sliding window whose slide equals its size.
 */

/** Window shape in milliseconds. `slideMs === sizeMs` for tumbling windows. */
export interface WindowSpec {
  sizeMs: number;
  slideMs: number;
  offsetMs: number;
}

/** One window as epoch milliseconds, `[startMs, endMs)`. */
export interface WindowBounds {
  startMs: number;
  endMs: number;
}

function floorDiv(a: number, b: number): number {
  return Math.floor(a / b);
}

/**
 * All windows containing the instant `eventMs` (epoch ms), oldest first.
 * A tumbling spec yields exactly one window; a sliding one `ceil(size / slide)`
 * or fewer. Throws `RangeError` for a non-positive size or slide, or a slide
 * larger than the size (Spark refuses the same).
 */
export function assignWindows(eventMs: number, spec: WindowSpec): WindowBounds[] {
  const { sizeMs, slideMs, offsetMs } = spec;
  if (!(sizeMs > 0) || !(slideMs > 0)) throw new RangeError("window size and slide must be > 0 ms");
  if (slideMs > sizeMs) throw new RangeError("window slide must be <= window size");
  const lastStart = floorDiv(eventMs - offsetMs, slideMs) * slideMs + offsetMs;
  const out: WindowBounds[] = [];
  for (let start = lastStart - Math.ceil(sizeMs / slideMs) * slideMs; start <= lastStart; start += slideMs) {
    if (start <= eventMs && eventMs < start + sizeMs) out.push({ startMs: start, endMs: start + sizeMs });
  }
  return out;
}

/** How many candidate windows the SQL must generate per event: `ceil(size / slide)`. */
export function windowsPerEvent(spec: WindowSpec): number {
  return Math.ceil(spec.sizeMs / spec.slideMs);
}
