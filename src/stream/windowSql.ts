/**
 * SQL for window assignment: the same rule as `assignWindows` in
 * `src/core/windows.ts` (half-open, epoch-aligned, optional offset), evaluated
 * inside PostgreSQL so a batch's rows never leave the database.
 * `test/integration/windowSql.test.ts` checks the two agree.
 */
import { windowsPerEvent, type WindowSpec } from "../core/windows.js";

function int(n: number, what: string): string {
  if (!Number.isSafeInteger(n)) throw new RangeError(`${what} must be a whole number of ms, got ${n}`);
  return String(n);
}

/**
 * A `CROSS JOIN LATERAL` yielding `window_start`, `window_end` (timestamptz)
 * for every window containing `<alias>.event_time`. Only validated integers
 * are inlined; nothing user-supplied reaches the SQL text.
 */
export function windowsLateral(spec: WindowSpec, alias: string): string {
  const size = int(spec.sizeMs, "window size"), slide = int(spec.slideMs, "window slide"), off = int(spec.offsetMs, "window offset");
  const n = windowsPerEvent(spec);
  const lastStart = `(floor((extract(epoch from ${alias}.event_time) * 1000 - ${off}) / ${slide}) * ${slide} + ${off})`;
  // Whole days and the remaining ms apart: a single ms * interval product is
  // computed in floating point and drifts by microseconds far from 1970.
  return `CROSS JOIN LATERAL (
    SELECT ws AS window_start, ws + interval '${size} milliseconds' AS window_end
      FROM (SELECT timestamptz 'epoch' + div(s, 86400000) * interval '24 hours' + mod(s, 86400000) * interval '1 millisecond' AS ws
              FROM (SELECT ${lastStart} - i * ${slide} AS s FROM generate_series(0, ${n - 1}) AS i) k) c
     WHERE ws <= ${alias}.event_time AND ${alias}.event_time < ws + interval '${size} milliseconds'
  ) w`;
}
