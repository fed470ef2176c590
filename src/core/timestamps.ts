/**
 * Strict timestamp parsing (DESIGN §7). Pure: no clock, no process time zone.
 *
 * Instants are integers of microseconds since the Unix epoch (`bigint`: a JS
 * number holds epoch µs exactly only up to year 2255), PostgreSQL's
 * `timestamptz` resolution. Years outside 0001–9999 (UTC) are refused.
 *
 * - `iso8601`: RFC 3339 and the common export forms, each accepted or refused
 *   by a written rule (README "Timestamps"): `YYYY-MM-DD`, then `T`, `t` or a
 *   space, `HH:MM[:SS[(.|,)fraction]]`, then `Z`/`z`, `±HH:MM`, `±HHMM`, `±HH`,
 *   ` UTC` or ` GMT` (any case), or nothing. `-00:00` is UTC. A string
 *   without a zone is read in the pipeline's configured IANA time zone, and
 *   refused when none is configured. A local time that does not exist (DST
 *   spring-forward gap) is refused; an ambiguous one (DST fall-back)
 *   resolves to the earlier instant, as PostgreSQL and java.time do. Refused
 *   with a message: a leap second (`:60`), week dates, ordinal dates, the
 *   basic (compact) form, slashed dates, zone abbreviations.
 * - `epoch_s` / `epoch_ms` / `epoch_us` / `epoch_ns`: integer or decimal
 *   numbers of s / ms / µs / ns since the epoch.
 *
 * A fraction may have any number of digits, in ISO 8601 and epoch numbers
 * alike (numpy writes 12 for picoseconds): zeros after the sixth are always
 * accepted, and a non-zero fraction finer than a microsecond follows
 * `subMicrosecond`: `refuse` (the default) or `truncate`: the instant becomes
 * the microsecond it falls in (rounded toward the past), so one instant
 * written as ISO 8601 or as any epoch number is stored alike (for a negative
 * epoch number that is away from 1970: `-0.0000005` s is `…59.999999Z`).
 */
import { MAX_INSTANT_US as MAX_US, MIN_INSTANT_US as MIN_US, usOfMs } from "./instants.js";
import { localToInstant } from "./timeZones.js";

export type TimestampFormat = "iso8601" | "epoch_s" | "epoch_ms" | "epoch_us" | "epoch_ns";
export type SubMicrosecond = "refuse" | "truncate";

export type InstantResult = { ok: true; us: bigint } | { ok: false; detail: string };

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?(?:\s*(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?|((?:UTC|GMT))))?$/i;
const EPOCH = /^[+-]?\d+(?:\.\d+)?$/;

/** Forms refused on purpose, with the message that says what to write instead. */
const REFUSED_FORMS: [RegExp, string][] = [
  [/^\d{4}-?W\d{2}/i, "ISO week dates are not accepted: write a calendar date YYYY-MM-DD"],
  [/^\d{4}-\d{3}(?:$|[T ])/i, "ordinal dates (YYYY-DDD) are not accepted: write a calendar date YYYY-MM-DD"],
  [/^\d{8}(?:T\d{2,6}|$)/i, "the basic (compact) ISO 8601 form is not accepted: write YYYY-MM-DDTHH:MM:SS"],
  [/^\d{1,4}[/.]\d{1,2}[/.]\d{1,4}/, "slashed or dotted dates are ambiguous (day and month order): write YYYY-MM-DD"],
  [
    /\d(?::\d{2})?(?:[.,]\d+)?\s*(?!UTC$|GMT$)[A-Za-z]{3,5}$/,
    "zone abbreviations are ambiguous: write an offset such as +01:00, or Z",
  ],
  [/^[+-]\d{5,}-/, "expanded years (+YYYYYY) are not accepted: years are 0001-9999"],
];

function inRange(us: bigint): InstantResult {
  if (us < MIN_US || us > MAX_US) return { ok: false, detail: "instant outside years 0001-9999" };
  return { ok: true, us };
}

const SUB_US = "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)";

/** Digits of `frac` beyond `keep` that are not all zero are finer than the unit kept: refuse or drop them. */
function finer(frac: string, keep: number, rule: SubMicrosecond): string | undefined {
  return rule === "refuse" && /[1-9]/.test(frac.slice(keep)) ? SUB_US : undefined;
}

/** Decimal digits after the point that are still whole microseconds, per epoch unit. */
const EPOCH_SHIFT: Record<Exclude<TimestampFormat, "iso8601">, number> = {
  epoch_s: 6,
  epoch_ms: 3,
  epoch_us: 0,
  epoch_ns: -3,
};

function parseEpoch(text: string, format: Exclude<TimestampFormat, "iso8601">, rule: SubMicrosecond): InstantResult {
  if (!EPOCH.test(text)) return { ok: false, detail: `not an epoch number: ${JSON.stringify(text.slice(0, 40))}` };
  const negative = text.startsWith("-");
  const [whole = "", frac = ""] = text.replace(/^[+-]/, "").split(".");
  const shift = EPOCH_SHIFT[format];
  // Digits finer than a microsecond: after the sixth fraction digit of a second (epoch_s), the third of a ms, any of a µs,
  // the last three integer digits and any fraction of a ns.
  const dropped = shift >= 0 ? frac.slice(shift) : whole.slice(-3) + frac;
  const bad = finer(dropped, 0, rule);
  if (bad) return { ok: false, detail: bad };
  const us =
    shift >= 0
      ? BigInt(whole) * 10n ** BigInt(shift) + BigInt(frac.slice(0, shift).padEnd(shift, "0") || "0")
      : BigInt(whole.slice(0, -3) || "0");
  // Truncation keeps the microsecond the instant falls in, as dropping digits of an ISO 8601 fraction does:
  // toward the past, so -0.0000005 s is 1969-12-31T23:59:59.999999Z, as 1969-12-31T23:59:59.9999995Z is.
  return inRange(negative ? -us - (/[1-9]/.test(dropped) ? 1n : 0n) : us);
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The days of `month` (1–12) of `year` in the proleptic Gregorian calendar (PostgreSQL's and ISO 8601's). */
export function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!;
}

/** The value of the two decimal digits at `i` of `s`, or -1 when they are not both digits. */
export function twoDigitsAt(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48,
    b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/**
 * `parseInstant`'s answer for the commonest form, read without a regular expression or a `Date`:
 * `YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z` (what `formatInstant` and most exporters write), year 0100 or later, every
 * field in range, no leap second. Undefined for any other text, which the general path reads (and answers
 * alike for this form: same instant).
 */
function utcFast(s: string): InstantResult | undefined {
  const len = s.length;
  if (len < 20 || len > 27 || s.charCodeAt(len - 1) !== 90 /* Z */) return undefined;
  if (
    s.charCodeAt(4) !== 45 ||
    s.charCodeAt(7) !== 45 ||
    s.charCodeAt(10) !== 84 ||
    s.charCodeAt(13) !== 58 ||
    s.charCodeAt(16) !== 58
  )
    return undefined;
  const hi = twoDigitsAt(s, 0),
    lo = twoDigitsAt(s, 2),
    month = twoDigitsAt(s, 5),
    day = twoDigitsAt(s, 8),
    hour = twoDigitsAt(s, 11),
    minute = twoDigitsAt(s, 14),
    second = twoDigitsAt(s, 17);
  if (
    hi < 1 ||
    lo < 0 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    hour < 0 ||
    hour > 23 ||
    minute < 0 ||
    minute > 59 ||
    second < 0 ||
    second > 59
  )
    return undefined;
  const year = hi * 100 + lo;
  if (day > daysInMonth(year, month)) return undefined;
  let fraction = 0;
  if (len > 20) {
    if (s.charCodeAt(19) !== 46 /* . */ || len === 21) return undefined;
    for (let i = 20; i < len - 1; i++) {
      const c = s.charCodeAt(i) - 48;
      if (c < 0 || c > 9) return undefined;
      fraction = fraction * 10 + c;
    }
    for (let i = len - 1; i < 26; i++) fraction *= 10;
  } else if (s.charCodeAt(19) !== 90) return undefined;
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  const us = ms * 1000 + fraction;
  return { ok: true, us: Number.isSafeInteger(us) ? BigInt(us) : BigInt(ms) * 1000n + BigInt(fraction) };
}

/**
 * Parses one timestamp strictly.
 * @param raw the field as text (numbers from JSON arrive as their literal text)
 * @param format how the pipeline's timestamps are written
 * @param timeZone IANA zone for zone-less ISO strings, or undefined to refuse them
 * @param subMicrosecond what a non-zero fraction finer than 1 µs does (default `refuse`)
 * @returns epoch µs, or `{ ok: false, detail }` saying why (never throws)
 */
export function parseInstant(
  raw: string,
  format: TimestampFormat,
  timeZone: string | undefined,
  subMicrosecond: SubMicrosecond = "refuse",
): InstantResult {
  if (format === "iso8601") {
    const fast = utcFast(raw);
    if (fast !== undefined) return fast;
  }
  const text = raw.trim();
  if (format !== "iso8601") return parseEpoch(text, format, subMicrosecond);
  const m = ISO.exec(text);
  if (!m) {
    for (const [form, detail] of REFUSED_FORMS)
      if (form.test(text)) return { ok: false, detail: `${detail}: ${JSON.stringify(text.slice(0, 40))}` };
    return { ok: false, detail: `not an ISO 8601 timestamp: ${JSON.stringify(text.slice(0, 40))}` };
  }
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", z, sign, oh = "", om = "", named] = m;
  const bad = finer(frac, 6, subMicrosecond);
  if (bad) return { ok: false, detail: bad };
  const year = Number(y),
    month = Number(mo),
    day = Number(d),
    hour = Number(h),
    minute = Number(mi),
    second = Number(s);
  if (second === 60 && minute === 59)
    return {
      ok: false,
      detail: `a leap second (:60) has no instant of its own (PostgreSQL and POSIX time have none): ${text}`,
    };
  if (year < 1 || month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) {
    return { ok: false, detail: `field out of range: ${text}` };
  }
  const milli = Number(frac.slice(0, 3).padEnd(3, "0"));
  const micro = BigInt(frac.slice(3, 6).padEnd(3, "0"));
  const wall = new Date(0);
  wall.setUTCFullYear(year, month - 1, day);
  wall.setUTCHours(hour, minute, second, milli);
  if (wall.getUTCDate() !== day) return { ok: false, detail: `no such date: ${y}-${mo}-${d}` };
  const wallMs = wall.getTime();
  if (z !== undefined || named !== undefined) return inRange(usOfMs(wallMs) + micro);
  if (sign !== undefined) {
    const offH = Number(oh),
      offM = Number(om || "0");
    if (offH > 18 || offM > 59)
      return { ok: false, detail: `offset out of range: ${text.slice(text.lastIndexOf(sign))}` };
    return inRange(usOfMs(wallMs - (sign === "-" ? -1 : 1) * (offH * 60 + offM) * 60_000) + micro);
  }
  if (timeZone === undefined)
    return { ok: false, detail: "timestamp has no zone and the pipeline configures no timeZone" };
  const instant = localToInstant(wallMs, timeZone);
  if (instant === null) return { ok: false, detail: `local time does not exist in ${timeZone} (DST gap): ${text}` };
  return inRange(usOfMs(instant) + micro);
}
