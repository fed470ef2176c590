/**
 * Window assignment — the pure rule the stream's SQL implements (see
 * `src/db/sql/fragments/windowAssignment.ts`, cross-checked by `test/integration/windowSql.test.ts`).
 *
 * Windows are half-open `[start, end)`, aligned to the Unix epoch in UTC and
 * shifted by an optional start offset, exactly like Spark's
 * `window(timeColumn, windowDuration, slideDuration, startTime)`.
 * A tumbling window is a sliding window whose slide equals its size.
 * The shape is configured in whole milliseconds; instants and the arithmetic
 * are integer microseconds (`bigint`), so an event at 12:09:59.999999 is in
 * [12:00, 12:10) and one at 12:10:00.000000 is not.
 */
import { floorDiv } from "./timestamps.js";

/** Window shape in milliseconds. `slideMs === sizeMs` for tumbling windows. */
export interface WindowSpec {
  sizeMs: number;
  slideMs: number;
  offsetMs: number;
}

/** One window as epoch microseconds, `[startUs, endUs)`. */
export interface WindowBounds {
  startUs: bigint;
  endUs: bigint;
}

/**
 * All windows containing the instant `eventUs` (epoch µs), oldest first.
 * A tumbling spec yields exactly one window; a sliding one `ceil(size / slide)`
 * or fewer. Throws `RangeError` for a non-positive size or slide, or a slide
 * larger than the size (Spark refuses the same).
 */
export function assignWindows(eventUs: bigint, spec: WindowSpec): WindowBounds[] {
  const { sizeMs, slideMs, offsetMs } = spec;
  if (!(sizeMs > 0) || !(slideMs > 0)) throw new RangeError("window size and slide must be > 0 ms");
  if (slideMs > sizeMs) throw new RangeError("window slide must be <= window size");
  const size = BigInt(sizeMs) * 1000n, slide = BigInt(slideMs) * 1000n, offset = BigInt(offsetMs) * 1000n;
  const lastStart = floorDiv(eventUs - offset, slide) * slide + offset;
  const out: WindowBounds[] = [];
  for (let start = lastStart - BigInt(windowsPerEvent(spec)) * slide; start <= lastStart; start += slide) {
    if (start <= eventUs && eventUs < start + size) out.push({ startUs: start, endUs: start + size });
  }
  return out;
}

/** How many candidate windows the SQL must generate per event: `ceil(size / slide)`. */
export function windowsPerEvent(spec: WindowSpec): number {
  return Math.ceil(spec.sizeMs / spec.slideMs);
}
