/**
 * SQL for window assignment: the same rule as `assignWindows` in
 * `src/core/windows.ts` (half-open, epoch-aligned, optional offset), evaluated
 * inside PostgreSQL so a batch's rows never leave the database.
 * `test/integration/windowSql.test.ts` checks the two agree.
 *
 * Arithmetic is on bigint epoch microseconds, `timestamptz`'s own resolution
 * (epoch µs of year 9999 are ~2.5e17, far inside bigint): numeric and
 * interval arithmetic per row cost ten times more, and a single
 * `µs * interval` product is a float that drifts far from 1970. Instants are
 * made from µs only where rows are few (after aggregation, or for late rows).
 */
import { windowsPerEvent, type WindowSpec } from "../../../core/windows.js";

function us(ms: number, what: string): string {
  if (!Number.isSafeInteger(ms)) throw new RangeError(`${what} must be a whole number of ms, got ${ms}`);
  return (BigInt(ms) * 1000n).toString();
}

/** `timestamptz` from a bigint epoch-µs SQL expression, exact over years 0001–9999. */
export function usToTimestamptz(expr: string): string {
  return `(timestamptz 'epoch' + ((${expr}) / 86400000000) * interval '24 hours' + ((${expr}) % 86400000000) * interval '1 microsecond')`;
}

/** Epoch µs (bigint) of a timestamptz SQL expression (`extract` is an exact numeric). */
export function timestamptzToUs(ts: string): string {
  return `(extract(epoch from ${ts}) * 1000000)::bigint`;
}

/** The window size in µs as SQL text (a validated integer), for `ws_us + size`. */
export function windowSizeUs(spec: WindowSpec): string {
  return us(spec.sizeMs, "window size");
}

/**
 * A `CROSS JOIN LATERAL` aliased `as` (default `w`) yielding `ws_us` (bigint window start,
 * epoch µs) for every window containing `<alias>.event_time`. Only validated
 * integers are inlined; nothing user-supplied reaches the SQL text.
 */
export function windowsLateralUs(spec: WindowSpec, alias: string, as = "w"): string {
  const size = us(spec.sizeMs, "window size"), slide = us(spec.slideMs, "window slide"), off = us(spec.offsetMs, "window offset");
  const t = timestamptzToUs(`${alias}.event_time`);
  // Floor division on bigint: % keeps the dividend's sign, so fold it back into [0, slide).
  const lastStart = `(${t} - (((${t} - ${off}) % ${slide}) + ${slide}) % ${slide})`;
  const n = windowsPerEvent(spec);
  if (n === 1 && spec.sizeMs === spec.slideMs) return `CROSS JOIN LATERAL (SELECT ${lastStart} AS ws_us) ${as}`;
  return `CROSS JOIN LATERAL (
    SELECT x.last_start - i * ${slide} AS ws_us
      FROM (SELECT ${lastStart} AS last_start, ${t} AS t_us) x, generate_series(0::bigint, ${n - 1}) AS i
     WHERE x.t_us < x.last_start - i * ${slide} + ${size}
  ) ${as}`;
}

/**
 * Like `windowsLateralUs`, aliased `w` with `window_start` and `window_end`
 * as timestamptz (for corrections and reconcile, which read few rows).
 */
export function windowsLateral(spec: WindowSpec, alias: string): string {
  const size = windowSizeUs(spec);
  return `${windowsLateralUs(spec, alias, "wm")}
    CROSS JOIN LATERAL (SELECT ${usToTimestamptz("wm.ws_us")} AS window_start, ${usToTimestamptz(`wm.ws_us + ${size}`)} AS window_end) w`;
}
