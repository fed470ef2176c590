/**
 * SQL for window assignment: the same rule as `assignWindows` in
 * `src/core/windows.ts` (half-open; fixed-length windows epoch-aligned with an
 * optional offset, calendar windows at local boundaries of a time zone),
 * evaluated inside PostgreSQL so a batch's rows never leave the database.
 * The stream, the correction and reconcile all assign windows through this
 * module. `test/integration/windowSql.test.ts` and
 * `test/integration/calendarSql.test.ts` check SQL and core agree.
 *
 * Arithmetic is on bigint epoch microseconds, `timestamptz`'s own resolution
 * (epoch µs of year 9999 are ~2.5e17, far inside bigint): numeric and
 * interval arithmetic per row cost ten times more, and a single
 * `µs * interval` product is a float that drifts far from 1970. Instants are
 * made from µs only where rows are few (after aggregation, or for late rows).
 */
import {
  windowsPerEvent,
  type CalendarWindowSpec,
  type FixedWindowSpec,
  type WindowSpec,
} from "../../../core/windows.js";

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

/**
 * SQL for the end (bigint epoch µs) of the window yielded by `windowsLateralUs(spec, …, as)`:
 * `<as>.ws_us + size` for fixed-length windows, the lateral's own `<as>.we_us` for calendar ones.
 */
export function windowEndUs(spec: WindowSpec, as = "w"): string {
  return spec.calendar === undefined ? `${as}.ws_us + ${us(spec.sizeMs, "window size")}` : `${as}.we_us`;
}

/**
 * A `CROSS JOIN LATERAL` aliased `as` (default `w`) yielding `ws_us` (bigint window start,
 * epoch µs) for every window containing `<alias>.event_time` (calendar windows
 * also yield `we_us`, the end; see `windowEndUs`). Only validated
 * integers and a validated zone name are inlined; nothing else user-supplied reaches the SQL text.
 */
export function windowsLateralUs(spec: WindowSpec, alias: string, as = "w"): string {
  if (spec.calendar !== undefined) {
    return `${calendarLateral(spec, `${alias}.event_time`, `${as}_`)}
    CROSS JOIN LATERAL (SELECT ${timestamptzToUs(`${as}_.ws`)} AS ws_us, ${timestamptzToUs(`${as}_.we`)} AS we_us) ${as}`;
  }
  return fixedLateralUs(spec, alias, as);
}

function fixedLateralUs(spec: FixedWindowSpec, alias: string, as: string): string {
  const size = us(spec.sizeMs, "window size"),
    slide = us(spec.slideMs, "window slide"),
    off = us(spec.offsetMs, "window offset");
  const t = timestamptzToUs(`${alias}.event_time`);
  // Floor division on bigint: % keeps the dividend's sign, so fold it back into [0, slide).
  // The event's µs are computed once a row (`OFFSET 0` keeps the subquery from being flattened): flattened,
  // every reference to ws_us (the start, the end, the late rule) would repeat the numeric `extract` twice.
  const lastStart = `(x.t_us - (((x.t_us - ${off}) % ${slide}) + ${slide}) % ${slide})`;
  const eventUs = `(SELECT ${t} AS t_us OFFSET 0) x`;
  const n = windowsPerEvent(spec);
  if (n === 1 && spec.sizeMs === spec.slideMs)
    return `CROSS JOIN LATERAL (SELECT ${lastStart} AS ws_us FROM ${eventUs} OFFSET 0) ${as}`;
  return `CROSS JOIN LATERAL (
    SELECT y.last_start - i * ${slide} AS ws_us
      FROM (SELECT ${lastStart} AS last_start, x.t_us FROM ${eventUs} OFFSET 0) y, generate_series(0::bigint, ${n - 1}) AS i
     WHERE y.t_us < y.last_start - i * ${slide} + ${size}
  ) ${as}`;
}

/**
 * Like `windowsLateralUs`, aliased `w` with `window_start` and `window_end`
 * as timestamptz (for corrections and reconcile, which read few rows).
 */
export function windowsLateral(spec: WindowSpec, alias: string): string {
  if (spec.calendar !== undefined) {
    return `${calendarLateral(spec, `${alias}.event_time`, "wm")}
    CROSS JOIN LATERAL (SELECT wm.ws AS window_start, wm.we AS window_end) w`;
  }
  return `${windowsLateralUs(spec, alias, "wm")}
    CROSS JOIN LATERAL (SELECT ${usToTimestamptz("wm.ws_us")} AS window_start, ${usToTimestamptz(windowEndUs(spec, "wm"))} AS window_end) w`;
}

/*
 * Calendar windows (docs/DESIGN.md "Calendar windows"), the rule of
 * `calendarWindows` in src/core/windows.ts written with PostgreSQL's own zone
 * arithmetic:
 * - `t AT TIME ZONE z` is the event's local wall-clock time (a `timestamp`);
 *   `date_trunc` of it, less the days back to the week's first day, is the
 *   local start of its unit; `local + n * interval '1 month'` moves on the wall clock.
 * - A local boundary `l` becomes an instant as `boundary` says: normally
 *   `l AT TIME ZONE z`. Where the offset a day before that instant differs
 *   from the one it was read with (a DST change is near), both readings (`l` less the earlier offset,
 *   `l` less the later) are checked: a local time shown twice starts at its
 *   first showing (PostgreSQL's own reading takes the second), a skipped one is
 *   read with the offset before the gap (PostgreSQL's reading).
 * - When the unit's boundaries do not hold the instant (a zone whose change
 *   skips or repeats a span around midnight, not at it) the neighbouring unit
 *   is taken, as in the core.
 * Each step is a `LATERAL (… OFFSET 0)` so that its values are computed once
 * per row (a flattened subquery would repeat the zone conversions).
 */

/** The zone name as a SQL literal; the name was validated as an IANA zone, and only its plain characters are let through. */
function zoneLiteral(zone: string): string {
  if (!/^[A-Za-z0-9_+\-/]+$/.test(zone)) throw new RangeError(`not a time zone name: ${JSON.stringify(zone)}`);
  return `'${zone}'`;
}

const UNIT_INTERVAL = { day: "interval '1 day'", week: "interval '7 days'", month: "interval '1 month'" } as const;

/** SQL: the local wall-clock time `l` (timestamp) moved by `n` units (`n` an integer SQL expression or literal). */
function addUnits(l: string, spec: CalendarWindowSpec, n: string | number): string {
  return n === 0 || n === "0" ? `(${l})` : `((${l}) + (${n}) * ${UNIT_INTERVAL[spec.calendar.unit]})`;
}

/** SQL: the local start (timestamp) of the calendar unit holding the local wall-clock time `local`. */
function unitStart(local: string, spec: CalendarWindowSpec): string {
  const { unit, weekStart } = spec.calendar;
  if (unit === "month") return `date_trunc('month', ${local})`;
  if (unit === "day") return `date_trunc('day', ${local})`;
  if (!Number.isInteger(weekStart) || weekStart < 1 || weekStart > 7)
    throw new RangeError(`weekStart must be 1-7, got ${weekStart}`);
  return `(date_trunc('day', ${local}) - ((extract(isodow FROM ${local})::int - ${weekStart} + 7) % 7) * interval '1 day')`;
}

/**
 * SQL: the instant (timestamptz) at which the local boundary `l` (timestamp)
 * begins a window in zone `z`; `ua` is `l AT TIME ZONE z` (pass a column to
 * compute it once).
 */
function boundary(l: string, z: string, ua = `((${l}) AT TIME ZONE ${z})`): string {
  const before = `((${ua}) - interval '24 hours')`,
    after = `((${ua}) + interval '24 hours')`;
  const wallBefore = `(${before} AT TIME ZONE ${z})`,
    wallAfter = `(${after} AT TIME ZONE ${z})`;
  // The offsets (intervals) a day before and a day after; each reading of l with one of them.
  const offBefore = `(${wallBefore} - (${before} AT TIME ZONE 'UTC'))`,
    offAfter = `(${wallAfter} - (${after} AT TIME ZONE 'UTC'))`;
  const early = `(((${l}) - ${offBefore}) AT TIME ZONE 'UTC')`,
    late = `(((${l}) - ${offAfter}) AT TIME ZONE 'UTC')`;
  const earlyValid = `((${early} AT TIME ZONE ${z}) = (${l}))`,
    lateValid = `((${late} AT TIME ZONE ${z}) = (${l}))`;
  // Fast path: the offset a day before ua is the one PostgreSQL read l with. Then no change
  // lies within the day before ua, so l is not shown twice (PostgreSQL's reading of a doubled
  // time is the later one, after the change), and a skipped l is read with the offset
  // before the gap, as ours; one zone conversion instead of the four below.
  return `(CASE WHEN ${wallBefore} = (${l}) - interval '24 hours' THEN (${ua})
              WHEN ${earlyValid} AND ${lateValid} THEN least(${early}, ${late})
              WHEN ${earlyValid} THEN ${early} WHEN ${lateValid} THEN ${late}
              ELSE greatest(${early}, ${late}) END)`;
}

/**
 * `CROSS JOIN LATERAL`s ending in one aliased `as` that yields `ws` and `we`
 * (timestamptz start and end) for every calendar window holding the instant `t`.
 */
function calendarLateral(spec: CalendarWindowSpec, t: string, as: string): string {
  const z = zoneLiteral(spec.calendar.timeZone),
    n = spec.calendar.span;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new RangeError(`calendar window span must be a whole number >= 1, got ${n}`);
  const p = `${as}_`;
  const unitOne = addUnits(`${p}1.l0`, spec, 1);
  const grid = `CROSS JOIN LATERAL (SELECT ${unitStart(`(${t} AT TIME ZONE ${z})`, spec)} AS l0 OFFSET 0) ${p}1
    CROSS JOIN LATERAL (SELECT ${p}1.l0 AT TIME ZONE ${z} AS ua0, ${unitOne} AT TIME ZONE ${z} AS ua1 OFFSET 0) ${p}2
    CROSS JOIN LATERAL (SELECT ${boundary(`${p}1.l0`, z, `${p}2.ua0`)} AS s0, ${boundary(unitOne, z, `${p}2.ua1`)} AS e0 OFFSET 0) ${p}3`;
  const before = `${t} < ${p}3.s0`,
    after = `${t} >= ${p}3.e0`;
  if (n === 1) {
    return `${grid}
    CROSS JOIN LATERAL (SELECT CASE WHEN ${before} THEN ${boundary(addUnits(`${p}1.l0`, spec, -1), z)} WHEN ${after} THEN ${p}3.e0 ELSE ${p}3.s0 END AS ws,
                               CASE WHEN ${before} THEN ${p}3.s0 WHEN ${after} THEN ${boundary(addUnits(`${p}1.l0`, spec, 2), z)} ELSE ${p}3.e0 END AS we
                        OFFSET 0) ${as}`;
  }
  return `${grid}
    CROSS JOIN LATERAL (SELECT CASE WHEN ${before} THEN ${addUnits(`${p}1.l0`, spec, -1)} WHEN ${after} THEN ${unitOne} ELSE ${p}1.l0 END AS gl OFFSET 0) ${p}4
    CROSS JOIN LATERAL (SELECT ${addUnits(`${p}4.gl`, spec, "-k")} AS ls, ${addUnits(`${p}4.gl`, spec, `${n} - k`)} AS le
                          FROM generate_series(${n - 1}, 0, -1) AS k) ${p}5
    CROSS JOIN LATERAL (SELECT ${p}5.ls AT TIME ZONE ${z} AS uas, ${p}5.le AT TIME ZONE ${z} AS uae OFFSET 0) ${p}6
    CROSS JOIN LATERAL (SELECT ${boundary(`${p}5.ls`, z, `${p}6.uas`)} AS ws, ${boundary(`${p}5.le`, z, `${p}6.uae`)} AS we OFFSET 0) ${as}`;
}
