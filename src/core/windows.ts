/**
 * Window assignment — the pure rule the stream's SQL implements (see
 * `src/db/sql/fragments/windowAssignment.ts`, cross-checked by
 * `test/integration/windowSql.test.ts` and `test/integration/calendarSql.test.ts`).
 *
 * Two kinds of window shape, both half-open `[start, end)` between instants:
 *
 * - **Fixed length** (`FixedWindowSpec`): aligned to the Unix epoch in UTC and
 *   shifted by an optional start offset, exactly like Spark's
 *   `window(timeColumn, windowDuration, slideDuration, startTime)`.
 *   A tumbling window is a sliding window whose slide equals its size.
 *   The shape is configured in whole milliseconds; instants and the arithmetic
 *   are integer microseconds (`bigint`), so an event at 12:09:59.999999 is in
 *   [12:00, 12:10) and one at 12:10:00.000000 is not.
 * - **Calendar** (`CalendarWindowSpec`, docs/DESIGN.md "Calendar windows"):
 *   local days, weeks or months of one IANA time zone. Boundaries are local
 *   midnights (of the first day of a week or month), so the day of a spring
 *   DST change lasts 23 hours and the autumn one 25. A window is still a pair
 *   of instants; only where the boundaries fall differs.
 */
import { DateTime, IANAZone } from "luxon";
import { floorDiv, formatInstant, MAX_INSTANT_US, MIN_INSTANT_US } from "./instants.js";

/** Fixed-length window shape in milliseconds. `slideMs === sizeMs` for tumbling windows. */
export interface FixedWindowSpec {
  sizeMs: number;
  slideMs: number;
  offsetMs: number;
  calendar?: undefined;
}

/** The calendar unit a calendar window's boundaries follow. */
export type CalendarUnit = "day" | "week" | "month";

/**
 * Calendar windows: a window starts at every boundary of `unit` (every local
 * midnight, every local midnight starting `weekStart`, every first of a month)
 * and lasts `span` such units. Tumbling windows have `span` 1; "7 days sliding
 * by 1 day" is unit `day`, span 7.
 */
export interface CalendarWindowSpec {
  calendar: {
    unit: CalendarUnit;
    /** Whole units per window, >= 1. */
    span: number;
    /** IANA time zone name, e.g. `America/New_York`. */
    timeZone: string;
    /** First day of a week, ISO numbering: 1 = Monday (the default) … 7 = Sunday. Used only by unit `week`. */
    weekStart: number;
  };
}

export type WindowSpec = FixedWindowSpec | CalendarWindowSpec;

/** One window as epoch microseconds, `[startUs, endUs)`. */
export interface WindowBounds {
  startUs: bigint;
  endUs: bigint;
}

/**
 * All windows containing the instant `eventUs` (epoch µs), oldest first.
 * A tumbling spec yields exactly one window; a sliding one `ceil(size / slide)`
 * or fewer (a calendar one exactly `span`). Throws `RangeError` for a
 * non-positive size or slide, or a slide larger than the size (Spark refuses
 * the same), or a calendar span that is not a whole number >= 1.
 */
export function assignWindows(eventUs: bigint, spec: WindowSpec): WindowBounds[] {
  if (spec.calendar !== undefined) return calendarWindows(eventUs, spec);
  const { sizeMs, slideMs, offsetMs } = spec;
  if (!(sizeMs > 0) || !(slideMs > 0)) throw new RangeError("window size and slide must be > 0 ms");
  if (slideMs > sizeMs) throw new RangeError("window slide must be <= window size");
  const size = BigInt(sizeMs) * 1000n,
    slide = BigInt(slideMs) * 1000n,
    offset = BigInt(offsetMs) * 1000n;
  const lastStart = floorDiv(eventUs - offset, slide) * slide + offset;
  const out: WindowBounds[] = [];
  for (let start = lastStart - BigInt(windowsPerEvent(spec)) * slide; start <= lastStart; start += slide) {
    if (start <= eventUs && eventUs < start + size) out.push({ startUs: start, endUs: start + size });
  }
  return out;
}

/** How many candidate windows the SQL must generate per event: `ceil(size / slide)`, or a calendar spec's `span`. */
export function windowsPerEvent(spec: WindowSpec): number {
  if (spec.calendar !== undefined) return spec.calendar.span;
  return Math.ceil(spec.sizeMs / spec.slideMs);
}

const DAY_MS = 86_400_000;

/**
 * An upper bound of any window's length, ms: the size of a fixed window; for a
 * calendar window its span in days (31 per month, 7 per week) plus one day for
 * DST and zone changes. Used to bound event-time lookups (`event_time >= from - longest`).
 */
export function longestWindowMs(spec: WindowSpec): number {
  if (spec.calendar === undefined) return spec.sizeMs;
  const days = { day: 1, week: 7, month: 31 }[spec.calendar.unit];
  return (spec.calendar.span * days + 1) * DAY_MS;
}

/**
 * The start (epoch µs) of the window of `spec` that ends at `endUs`: one window
 * length earlier for a fixed spec, `span` calendar units earlier for a calendar
 * one. The size is constant in its units, so an end names a window.
 */
export function windowStartOf(endUs: bigint, spec: WindowSpec): bigint {
  if (spec.calendar === undefined) return endUs - BigInt(spec.sizeMs) * 1000n;
  const cal = spec.calendar,
    zone = calendarZone(cal.timeZone);
  const endMs = Number(floorDiv(endUs, 1000n));
  const wall = gridStart(endMs + zone.offsetMs(endMs), cal);
  return BigInt(zone.boundaryMs(addUnits(wall, cal.unit, -cal.span))) * 1000n;
}

const WEEKDAY_NAMES = ["", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/**
 * A calendar shape in words, for people: `1 day in America/New_York`,
 * `7 days every day in America/New_York`, `1 week from Sunday in UTC`.
 */
export function describeCalendar(spec: CalendarWindowSpec): string {
  const { unit, span, timeZone, weekStart } = spec.calendar;
  const size = `${span} ${unit}${span === 1 ? "" : "s"}`;
  const every = span === 1 ? "" : ` every ${unit}`;
  const from = unit === "week" ? ` from ${WEEKDAY_NAMES[weekStart]}` : "";
  return `${size}${every}${from} in ${timeZone}`;
}

/** A zone's UTC offsets and memoised boundary instants (wall-clock ms → epoch ms). */
class CalendarZone {
  private readonly zone: IANAZone;
  private readonly boundaries = new Map<number, number>();

  constructor(name: string) {
    this.zone = IANAZone.create(name);
    if (!this.zone.isValid) throw new RangeError(`unknown time zone ${JSON.stringify(name)}`);
  }

  /** UTC offset at epoch ms `ms`, in ms (offsets of whole seconds, e.g. LMT -0:44:30, are exact). */
  offsetMs(ms: number): number {
    return Math.round(this.zone.offset(ms) * 60_000);
  }

  /**
   * The instant (epoch ms) at which the wall-clock time `wallMs` (ms of the
   * local date-time read as if it were UTC) begins a window:
   * - the instant showing that local time, when there is one;
   * - when it occurs twice (a fall-back overlap), the first of the two;
   * - when it is skipped (a spring-forward gap), the local time read with the
   *   offset in force before the gap, i.e. moved forward by the gap — as
   *   PostgreSQL reads a skipped local time (so midnight skipped to 01:00 starts
   *   the day at 01:00).
   * The offsets before and after are taken a day either side: zones change
   * offset at most once within two days.
   */
  boundaryMs(wallMs: number): number {
    const known = this.boundaries.get(wallMs);
    if (known !== undefined) return known;
    const before = this.offsetMs(wallMs - DAY_MS),
      after = this.offsetMs(wallMs + DAY_MS);
    let at: number;
    if (before === after) at = wallMs - before;
    else {
      const early = wallMs - before,
        late = wallMs - after;
      const earlyValid = this.offsetMs(early) === before,
        lateValid = this.offsetMs(late) === after;
      if (earlyValid && lateValid) at = Math.min(early, late);
      else if (earlyValid) at = early;
      else if (lateValid) at = late;
      else at = Math.max(early, late);
    }
    if (this.boundaries.size > 10_000) this.boundaries.clear();
    this.boundaries.set(wallMs, at);
    return at;
  }
}

const zones = new Map<string, CalendarZone>();
function calendarZone(name: string): CalendarZone {
  let z = zones.get(name);
  if (z === undefined) zones.set(name, (z = new CalendarZone(name)));
  return z;
}

/** Wall-clock ms (read as UTC) of the start of the calendar unit holding the wall-clock time `wallMs`. */
function gridStart(wallMs: number, cal: CalendarWindowSpec["calendar"]): number {
  const local = DateTime.fromMillis(wallMs, { zone: "utc" });
  switch (cal.unit) {
    case "day":
      return local.startOf("day").toMillis();
    case "week":
      return local
        .startOf("day")
        .minus({ days: (local.weekday - cal.weekStart + 7) % 7 })
        .toMillis();
    case "month":
      return local.startOf("month").toMillis();
  }
}

/** `wallMs` moved by `n` calendar units on the wall clock (a month from the first of a month is the first of the next). */
function addUnits(wallMs: number, unit: CalendarUnit, n: number): number {
  if (unit === "day") return wallMs + n * DAY_MS;
  if (unit === "week") return wallMs + 7 * n * DAY_MS;
  return DateTime.fromMillis(wallMs, { zone: "utc" }).plus({ months: n }).toMillis();
}

/**
 * Calendar windows holding `eventUs`. The unit holding the event's local time
 * is its window when its boundaries hold the instant (always, except in a zone
 * whose change skips or repeats a span around midnight other than at midnight:
 * then the neighbouring unit is taken, so windows always tile time).
 */
function calendarWindows(eventUs: bigint, spec: CalendarWindowSpec): WindowBounds[] {
  const cal = spec.calendar;
  if (!Number.isInteger(cal.span) || cal.span < 1)
    throw new RangeError("a calendar window spans a whole number >= 1 of units");
  const zone = calendarZone(cal.timeZone);
  const eventMs = Number(floorDiv(eventUs, 1000n));
  const us = (ms: number) => BigInt(ms) * 1000n;
  let grid = gridStart(eventMs + zone.offsetMs(eventMs), cal);
  const start = us(zone.boundaryMs(grid)),
    end = us(zone.boundaryMs(addUnits(grid, cal.unit, 1)));
  if (eventUs < start) grid = addUnits(grid, cal.unit, -1);
  else if (eventUs >= end) grid = addUnits(grid, cal.unit, 1);
  const out: WindowBounds[] = [];
  for (let k = cal.span - 1; k >= 0; k--) {
    out.push({
      startUs: us(zone.boundaryMs(addUnits(grid, cal.unit, -k))),
      endUs: us(zone.boundaryMs(addUnits(grid, cal.unit, cal.span - k))),
    });
  }
  return out;
}

/**
 * The name a calendar window's zone is kept under (in the policy and in the
 * SQL): zone names are case-insensitive (IANA; PostgreSQL and luxon read
 * them so), so `america/new_york` is `America/New_York`, spelt as the tz
 * database spells it (`Intl.DateTimeFormat().resolvedOptions().timeZone`). A
 * link (`US/Pacific`, `EST`) is kept as written, not replaced by the zone it
 * points to: the two sides' tz data may not agree on what a link points to
 * (`EST` is a fixed UTC−5 in some, a link to `America/Panama` in others).
 * @param zone a zone name luxon accepts (src/core/timeZones.ts `isValidTimeZone`)
 * @returns the tz database's spelling of `zone`, or `zone` itself for a link
 * @throws RangeError when `zone` is not a zone name at all
 */
export function canonicalTimeZone(zone: string): string {
  const resolved = new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;
  return resolved.toLowerCase() === zone.toLowerCase() ? resolved : zone;
}

/** Whether two zone names name the same zone by spelling (case-insensitive, as IANA names are). */
export function sameTimeZoneName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** A pipeline's window shape for the range check: a window spec, or a session gap in ms. */
export type WindowShape = WindowSpec | { sessionGapMs: number };

const RANGE_TEXT = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z";

/**
 * Why the windows of an event at `eventUs` reach outside the supported instants (0001-01-01T00:00:00Z to
 * 9999-12-31T23:59:59.999999Z, README "Timestamps"), or undefined when they all lie inside: a window's start
 * and end, a session's end (the event time plus the gap), are instants every part (the stream's SQL, the
 * correction job, the REST API) computes with and sends to PostgreSQL. Admission quarantines such an event
 * (PARSE_FAIL) rather than window it into year 0 or 10000. Only events within the longest window (plus a day)
 * of either edge are computed; the rest return at once.
 */
export function windowOutsideRange(eventUs: bigint, shape: WindowShape): string | undefined {
  const reachMs = "sessionGapMs" in shape ? shape.sessionGapMs : longestWindowMs(shape) + DAY_MS;
  const reach = BigInt(reachMs) * 1000n;
  if (eventUs - reach >= MIN_INSTANT_US && eventUs + reach <= MAX_INSTANT_US) return undefined;
  if ("sessionGapMs" in shape) {
    const end = eventUs + BigInt(shape.sessionGapMs) * 1000n;
    return end > MAX_INSTANT_US
      ? `event time ${formatInstant(eventUs)}: its session window would end at ${formatInstant(end)} (the event time plus the gap), after the last supported instant (${RANGE_TEXT})`
      : undefined;
  }
  for (const w of assignWindows(eventUs, shape)) {
    if (w.startUs < MIN_INSTANT_US || w.endUs > MAX_INSTANT_US) {
      return `event time ${formatInstant(eventUs)}: its window [${formatInstant(w.startUs)}, ${formatInstant(w.endUs)}) reaches outside the supported instants (${RANGE_TEXT})`;
    }
  }
  return undefined;
}
