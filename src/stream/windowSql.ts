/**
 * SQL for window assignment: the same rule as `assignWindows` in
 * `src/core/windows.ts` (half-open, epoch-aligned, optional offset), evaluated
 * inside PostgreSQL so a batch's rows never leave the database.
 * `test/integration/windowSql.test.ts` checks the two agree.
 *
 * Arithmetic is on bigint epoch milliseconds (event times are stored with
 * millisecond precision): numeric and interval arithmetic per row cost ten
 * times more, and a single `ms * interval` product is a float that drifts far
 * from 1970. Instants are made from ms only where rows are few (after
 * aggregation, or for late rows).
 */
import { windowsPerEvent, type WindowSpec } from "../core/windows.js";

function int(n: number, what: string): string {
  if (!Number.isSafeInteger(n)) throw new RangeError(`${what} must be a whole number of ms, got ${n}`);
  return String(n);
}

/** `timestamptz` from a bigint epoch-ms SQL expression, exact over years 0001–9999. */
export function msToTimestamptz(ms: string): string {
  return `(timestamptz 'epoch' + ((${ms}) / 86400000) * interval '24 hours' + ((${ms}) % 86400000) * interval '1 millisecond')`;
}

/** Epoch ms (bigint) of a timestamptz SQL expression. */
export function timestamptzToMs(ts: string): string {
  return `(extract(epoch from ${ts}) * 1000)::bigint`;
}

/**
 * A `CROSS JOIN LATERAL` aliased `as` (default `w`) yielding `ws_ms` (bigint window start,
 * epoch ms) for every window containing `<alias>.event_time`. Only validated
 * integers are inlined; nothing user-supplied reaches the SQL text.
 */
export function windowsLateralMs(spec: WindowSpec, alias: string, as = "w"): string {
  const size = int(spec.sizeMs, "window size"), slide = int(spec.slideMs, "window slide"), off = int(spec.offsetMs, "window offset");
  const t = timestamptzToMs(`${alias}.event_time`);
  // Floor division on bigint: % keeps the dividend's sign, so fold it back into [0, slide).
  const lastStart = `(${t} - (((${t} - ${off}) % ${slide}) + ${slide}) % ${slide})`;
  const n = windowsPerEvent(spec);
  if (n === 1 && spec.sizeMs === spec.slideMs) return `CROSS JOIN LATERAL (SELECT ${lastStart} AS ws_ms) ${as}`;
  return `CROSS JOIN LATERAL (
    SELECT x.last_start - i * ${slide} AS ws_ms
      FROM (SELECT ${lastStart} AS last_start, ${t} AS t_ms) x, generate_series(0, ${n - 1}) AS i
     WHERE x.t_ms < x.last_start - i * ${slide} + ${size}
  ) ${as}`;
}

/**
 * Like `windowsLateralMs`, aliased `w` with `window_start` and `window_end`
 * as timestamptz (for corrections and reconcile, which read few rows).
 */
export function windowsLateral(spec: WindowSpec, alias: string): string {
  const size = int(spec.sizeMs, "window size");
  return `${windowsLateralMs(spec, alias, "wm")}
    CROSS JOIN LATERAL (SELECT ${msToTimestamptz("wm.ws_ms")} AS window_start, ${msToTimestamptz(`wm.ws_ms + ${size}`)} AS window_end) w`;
}
