/**
 * Strict timestamp parsing (DESIGN §7). Pure: no clock, no process time zone.
 *
 * - `iso8601`: `YYYY-MM-DD[T ]HH:MM[:SS[.fraction]][Z|±HH[:MM]]`. A string
 *   without a zone is read in the pipeline's configured IANA time zone, and
 *   refused when none is configured. A local time that does not exist (DST
 *   spring-forward gap) is refused; an ambiguous one (DST fall-back) resolves
 *   to the earlier instant, as PostgreSQL and java.time do — give an offset to
 *   choose the other one.
 * - `epoch_ms` / `epoch_s`: integer or decimal numbers of ms / s since the epoch.
 *
 * Instants are epoch milliseconds; a fraction finer than 1 ms that is not zero
 * is refused rather than rounded. Years outside 0001–9999 are refused.
 */
import { DateTime, IANAZone } from "luxon";

export type TimestampFormat = "iso8601" | "epoch_ms" | "epoch_s";

export type InstantResult = { ok: true; ms: number } | { ok: false; detail: string };

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;
const EPOCH = /^[+-]?\d+(?:\.\d+)?$/;

/** Smallest and largest instants accepted: 0001-01-01T00:00Z and 9999-12-31T23:59:59.999Z. */
const MIN_MS = (() => {
  const d = new Date(Date.UTC(2000, 0, 1));
  d.setUTCFullYear(1);
  return d.getTime();
})();
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** True when `zone` is an IANA time zone name Luxon (ICU) knows, e.g. `America/New_York`, `UTC`. */
export function isValidTimeZone(zone: string): boolean {
  return IANAZone.isValidZone(zone);
}

function offsetMinutesAt(ms: number, zone: string): number {
  return DateTime.fromMillis(ms, { zone }).offset;
}

/** Instants for a wall-clock time (as if it were UTC, ms) in `zone`: 0 (DST gap), 1, or 2 (DST overlap), ascending. */
function instantsForWallTime(wallUtcMs: number, zone: string): number[] {
  // Candidate offsets: those in force a day either side cover every DST change.
  const candidates = new Set([offsetMinutesAt(wallUtcMs - 86_400_000, zone), offsetMinutesAt(wallUtcMs + 86_400_000, zone), offsetMinutesAt(wallUtcMs, zone)]);
  const valid: number[] = [];
  for (const off of candidates) {
    const instant = wallUtcMs - off * 60_000;
    if (offsetMinutesAt(instant, zone) === off) valid.push(instant);
  }
  return valid.sort((a, b) => a - b);
}

const HOUR_MS = 3_600_000;
/** Per (zone, wall-clock hour): the one offset in force through the whole hour, or null when it changes or is ambiguous. */
const hourOffsets = new Map<string, number | null>();

function stableOffsetOfHour(hour: number, zone: string): number | null {
  const key = `${zone}|${hour}`;
  let off = hourOffsets.get(key);
  if (off === undefined) {
    const first = instantsForWallTime(hour * HOUR_MS, zone);
    const last = instantsForWallTime(hour * HOUR_MS + HOUR_MS - 1, zone);
    off = first.length === 1 && last.length === 1 && first[0]! - hour * HOUR_MS === last[0]! - (hour * HOUR_MS + HOUR_MS - 1) ? (hour * HOUR_MS - first[0]!) / 60_000 : null;
    if (hourOffsets.size >= 200_000) hourOffsets.clear();
    hourOffsets.set(key, off);
  }
  return off;
}

/**
 * Converts a wall-clock time in `zone` (given as if it were UTC, epoch ms) to
 * an instant. Returns null when the local time does not exist in that zone;
 * an ambiguous one gives the earlier instant. Hours with one offset
 * throughout are cached (ICU offset look-ups are slow); others take the exact path.
 */
export function localToInstant(wallUtcMs: number, zone: string): number | null {
  const off = stableOffsetOfHour(Math.floor(wallUtcMs / HOUR_MS), zone);
  if (off !== null) return wallUtcMs - off * 60_000;
  return instantsForWallTime(wallUtcMs, zone)[0] ?? null;
}

function inRange(ms: number): InstantResult {
  if (!Number.isFinite(ms) || ms < MIN_MS || ms > MAX_MS) return { ok: false, detail: "instant outside years 0001-9999" };
  return { ok: true, ms };
}

/**
 * Parses one timestamp strictly.
 * @param raw the field as text (numbers from JSON arrive as their literal text)
 * @param format how the pipeline's timestamps are written
 * @param timeZone IANA zone for zone-less ISO strings, or undefined to refuse them
 * @returns epoch ms, or `{ ok: false, detail }` saying why (never throws)
 */
export function parseInstant(raw: string, format: TimestampFormat, timeZone: string | undefined): InstantResult {
  const text = raw.trim();
  if (format !== "iso8601") {
    if (!EPOCH.test(text)) return { ok: false, detail: `not an epoch number: ${JSON.stringify(text.slice(0, 40))}` };
    const negative = text.startsWith("-");
    const [whole = "", frac = ""] = text.replace(/^[+-]/, "").split(".");
    const shift = format === "epoch_ms" ? 0 : 3; // decimal digits that are whole milliseconds
    if (/[1-9]/.test(frac.slice(shift))) return { ok: false, detail: "sub-millisecond precision is not supported" };
    const abs = Number(whole) * 10 ** shift + Number(frac.slice(0, shift).padEnd(shift, "0") || "0");
    return inRange(negative ? -abs : abs);
  }
  const m = ISO.exec(text);
  if (!m) return { ok: false, detail: `not an ISO 8601 timestamp: ${JSON.stringify(text.slice(0, 40))}` };
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone] = m;
  if (/[1-9]/.test(frac.slice(3))) return { ok: false, detail: "sub-millisecond precision is not supported" };
  const year = Number(y), month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s);
  const milli = Number(frac.slice(0, 3).padEnd(3, "0"));
  if (year < 1 || month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) {
    return { ok: false, detail: `field out of range: ${text}` };
  }
  const wall = new Date(0);
  wall.setUTCFullYear(year, month - 1, day);
  wall.setUTCHours(hour, minute, second, milli);
  if (wall.getUTCDate() !== day) return { ok: false, detail: `no such date: ${y}-${mo}-${d}` };
  const wallMs = wall.getTime();
  if (zone !== undefined) {
    if (zone === "Z" || zone === "z") return inRange(wallMs);
    const sign = zone[0] === "-" ? -1 : 1;
    const digits = zone.slice(1).replace(":", "");
    const oh = Number(digits.slice(0, 2)), om = Number(digits.slice(2) || "0");
    if (oh > 18 || om > 59) return { ok: false, detail: `offset out of range: ${zone}` };
    return inRange(wallMs - sign * (oh * 60 + om) * 60_000);
  }
  if (timeZone === undefined) return { ok: false, detail: "timestamp has no zone and the pipeline configures no timeZone" };
  const instant = localToInstant(wallMs, timeZone);
  if (instant === null) return { ok: false, detail: `local time does not exist in ${timeZone} (DST gap): ${text}` };
  return inRange(instant);
}
