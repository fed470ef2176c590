/**
 * A landing's rows summarized as they are classified, for the micro-batch that streams exactly those rows
 * (src/db/sql/stream/feedBatch.ts): per (key, window) the count, exact sum, min and max of the accepted rows'
 * values, with the rows of each window by their place in the landing (row 0 is the landing's first), and the
 * event and ingestion times the batch's progress and watermark need. The micro-batch then reads none of the
 * landing's rows back from bronze; only a late window's rows, by `seq`, to record each late pair.
 *
 * Fixed-length windows only (tumbling and sliding, Spark's `window()`): a calendar window or a session window
 * leaves the summary unusable, as does a value that is not a plain decimal (`-12.50`, `7`; an exponent, a
 * leading `+` or `.` is summed by PostgreSQL, not here) or more accepted rows than `maxRows`. An unusable
 * summary keeps no windows; the batch then reads bronze as always.
 *
 * The aggregates are PostgreSQL's: a sum's scale is the largest of its terms' (`sum(numeric)`); min and max keep
 * their value's text, and of two equal values the later one (`numeric_smaller` and `numeric_larger` keep the
 * second of equals). Every field is structured-cloneable (it crosses from the replay's span worker).
 */
import type { BronzeRow } from "./admission.js";
import { formatScaled } from "./exactAggregate.js";
import type { WindowShape } from "./windows.js";

/** One (key, window) of the summary; instants epoch µs (safe integers: `addToSummary` gives up on any other). */
export interface SummaryWindow {
  groupKey: string;
  startUs: number;
  endUs: number;
  /** Accepted rows in the window. */
  n: number;
  /**
   * The values' sum scaled by 10^`scale`: a safe integer `number` while it stays one (`big` null), else `big`.
   * 0 when no row has a value.
   */
  sum: number;
  big: bigint | null;
  scale: number;
  /** The least and greatest value's text, null when no row has a value. */
  min: string | null;
  max: string | null;
  /** `min` and `max` as `digitsOf` reads them (compared without reading them again). */
  lo: Digits | null;
  hi: Digits | null;
  /** The window's rows by their place in the landing (0-based, accepted and quarantined rows counted). */
  rows: number[];
}

/** A landing's rows summarized (`summaryOf`, `addToSummary`); instants epoch µs. */
export interface SpanSummary {
  /** Why the summary cannot stand for the batch's read (null: it can). */
  unusable: string | null;
  /** Rows landed (accepted and quarantined). */
  rows: number;
  accepted: number;
  minEventUs: bigint | null;
  maxEventUs: bigint | null;
  /**
   * With `pendingUs`, the sum of the accepted rows' event times less the first's (µs, for the batch's average
   * event time): `pendingUs` gathers them while it stays a safe integer, then folds into this (`eventSum` adds up).
   */
  sumEventUs: bigint;
  pendingUs: number;
  /** The first accepted row's event time, µs. */
  firstEventUs: number | null;
  maxIngestionUs: bigint | null;
  /** Per key, per window start (epoch µs as a number: `spec` holds only instants that are safe integers). */
  windows: Map<string, Map<number, SummaryWindow>>;
  /** Fixed windows in µs; null when the shape is not one. */
  spec: { size: number; slide: number; offset: number; perEvent: number } | null;
  maxRows: number;
}

/** A plain decimal: what this summary sums itself. */
const PLAIN = /^-?\d+(?:\.\d+)?$/;

/**
 * An empty summary for a landing of a pipeline whose windows are `shape`, usable for at most `maxRows` accepted rows.
 */
export function summaryOf(shape: WindowShape, maxRows: number): SpanSummary {
  const fixed = "sizeMs" in shape && shape.calendar === undefined;
  return {
    unusable: fixed ? null : "not fixed-length windows",
    rows: 0,
    accepted: 0,
    minEventUs: null,
    maxEventUs: null,
    sumEventUs: 0n,
    pendingUs: 0,
    firstEventUs: null,
    maxIngestionUs: null,
    windows: new Map(),
    spec: fixed
      ? {
          size: shape.sizeMs * 1000,
          slide: shape.slideMs * 1000,
          offset: shape.offsetMs * 1000,
          perEvent: Math.ceil(shape.sizeMs / shape.slideMs),
        }
      : null,
    maxRows,
  };
}

function giveUp(s: SpanSummary, why: string): void {
  s.unusable = why;
  s.windows.clear();
}

/** Digits a value may have to be summed as a `number`: 15 keeps every sum of fewer than 10^(15.9 - 15) terms safe. */
const SAFE_DIGITS = 15;

/** A plain decimal's digits (its point dropped) as an integer, and its scale. */
interface Digits {
  int: number | bigint;
  scale: number;
}

/** `v`'s digits and scale; the integer a bigint past `SAFE_DIGITS`. */
function digitsOf(v: string): Digits {
  const dot = v.indexOf(".");
  const scale = dot < 0 ? 0 : v.length - dot - 1;
  const neg = v.charCodeAt(0) === 45;
  if (v.length - (neg ? 1 : 0) - (dot < 0 ? 0 : 1) > SAFE_DIGITS) return { int: BigInt(v.replace(".", "")), scale };
  let n = 0;
  for (let i = neg ? 1 : 0; i < v.length; i++) if (i !== dot) n = n * 10 + (v.charCodeAt(i) - 48);
  return { int: neg ? -n : n, scale };
}

const POW10 = Array.from({ length: 16 }, (_, i) => 10 ** i);

/** `x` (scaled by 10^`from`) scaled by 10^`to` (`to` >= `from`), as a bigint. */
const rescaled = (x: number | bigint, from: number, to: number): bigint => BigInt(x) * 10n ** BigInt(to - from);

/** `x` compared with `y`: negative, 0 or positive. */
function compare(x: Digits, y: Digits): number {
  if (typeof x.int === "number" && typeof y.int === "number") {
    if (x.scale === y.scale) return x.int - y.int;
    const s = Math.max(x.scale, y.scale);
    if (s - Math.min(x.scale, y.scale) < 16) {
      const l = x.int * POW10[s - x.scale]!,
        r = y.int * POW10[s - y.scale]!;
      if (Number.isSafeInteger(l) && Number.isSafeInteger(r)) return l - r;
    }
  }
  const s = Math.max(x.scale, y.scale);
  const d = rescaled(x.int, x.scale, s) - rescaled(y.int, y.scale, s);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

function add(w: SummaryWindow, v: string | null, d: Digits | null, row: number): void {
  w.n++;
  w.rows.push(row);
  if (v === null || d === null) return;
  const scale = Math.max(w.scale, d.scale);
  if (w.big === null && typeof d.int === "number" && scale - Math.min(w.scale, d.scale) < 16) {
    const a = w.sum * POW10[scale - w.scale]!,
      b = d.int * POW10[scale - d.scale]!;
    // Each product and the sum exact: integers no larger than 2^53.
    if (Number.isSafeInteger(a) && Number.isSafeInteger(b) && Number.isSafeInteger(a + b)) w.sum = a + b;
    else w.big = rescaled(w.sum, w.scale, scale) + rescaled(d.int, d.scale, scale);
  } else w.big = rescaled(w.big ?? w.sum, w.scale, scale) + rescaled(d.int, d.scale, scale);
  w.scale = scale;
  if (w.lo === null || compare(d, w.lo) <= 0) [w.min, w.lo] = [v, d];
  if (w.hi === null || compare(d, w.hi) >= 0) [w.max, w.hi] = [v, d];
}

/**
 * Adds the landing's next row (`row`, classified) to `s`: every row is counted, an accepted one goes into each
 * of its windows (the windows `assignWindows` gives: start <= t < start + size).
 */
export function addToSummary(s: SpanSummary, row: BronzeRow): void {
  const place = s.rows++;
  if (row.status !== "accepted" || s.unusable !== null) return;
  const tb = row.eventTimeUs!;
  if (++s.accepted > s.maxRows) return giveUp(s, "more rows than one micro-batch");
  if (row.value !== null && !PLAIN.test(row.value)) return giveUp(s, "a value that is not a plain decimal");
  const t = Number(tb);
  // Window starts and ends as numbers: exact while every instant involved is a safe integer (years 1685–2254).
  const { size, slide, offset, perEvent } = s.spec!;
  if (!Number.isSafeInteger(t - offset - size) || !Number.isSafeInteger(t + size))
    return giveUp(s, "an event time outside the instants summed as numbers");
  if (s.minEventUs === null || tb < s.minEventUs) s.minEventUs = tb;
  if (s.maxEventUs === null || tb > s.maxEventUs) s.maxEventUs = tb;
  // The sum in a number while it stays exact: the times' distances from the first.
  if (s.firstEventUs === null) s.firstEventUs = t;
  const pending = s.pendingUs + (t - s.firstEventUs);
  if (Number.isSafeInteger(pending) && Number.isSafeInteger(t - s.firstEventUs)) s.pendingUs = pending;
  else {
    s.sumEventUs += BigInt(s.pendingUs) + (tb - BigInt(s.firstEventUs));
    s.pendingUs = 0;
  }
  if (s.maxIngestionUs === null || row.ingestionTimeUs > s.maxIngestionUs) s.maxIngestionUs = row.ingestionTimeUs;
  const r = (t - offset) % slide;
  const last = t - (r < 0 ? r + slide : r);
  const d = row.value === null ? null : digitsOf(row.value);
  let byStart = s.windows.get(row.groupKey);
  if (byStart === undefined) s.windows.set(row.groupKey, (byStart = new Map()));
  for (let start = last - (perEvent - 1) * slide; start <= last; start += slide) {
    if (t >= start + size) continue;
    let w = byStart.get(start);
    if (w === undefined) {
      w = {
        groupKey: row.groupKey,
        startUs: start,
        endUs: start + size,
        n: 0,
        sum: 0,
        big: null,
        scale: 0,
        min: null,
        max: null,
        lo: null,
        hi: null,
        rows: [],
      };
      byStart.set(start, w);
    }
    add(w, row.value, d, place);
  }
}

/** Every window of `s`, key by key. */
export function* summaryWindows(s: SpanSummary): Generator<SummaryWindow> {
  for (const byStart of s.windows.values()) yield* byStart.values();
}

/** A window's sum as PostgreSQL writes it (`sum(numeric)`): null when no row had a value. */
export function windowSum(w: SummaryWindow): string | null {
  return w.min === null ? null : formatScaled(w.big ?? BigInt(w.sum), w.scale);
}

/** The sum of the accepted rows' event times, µs (the batch's average event time's numerator). */
export function eventSum(s: SpanSummary): bigint {
  return s.firstEventUs === null
    ? 0n
    : s.sumEventUs + BigInt(s.pendingUs) + BigInt(s.firstEventUs) * BigInt(s.accepted);
}

/** The batch's average event time's numerator as `extract(epoch …)` sums it: seconds with six decimals. */
export const epochSecondsText = (us: bigint): string => formatScaled(us, 6);
