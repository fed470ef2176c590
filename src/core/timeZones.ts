/**
 * Wall-clock times in an IANA time zone (luxon, ICU's tz data): which zones exist and the instant of
 * a local time, DST gaps and overlaps included (README "Timestamps"). Pure: no clock, no process time zone.
 */
import { DateTime, IANAZone } from "luxon";

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
  const candidates = new Set([
    offsetMinutesAt(wallUtcMs - 86_400_000, zone),
    offsetMinutesAt(wallUtcMs + 86_400_000, zone),
    offsetMinutesAt(wallUtcMs, zone),
  ]);
  const valid: number[] = [];
  for (const off of candidates) {
    const instant = wallUtcMs - off * 60_000;
    if (offsetMinutesAt(instant, zone) === off) valid.push(instant);
  }
  return valid.sort((a, b) => a - b);
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Per (zone, span of wall-clock time): the one offset in force through the whole span, or null when it changes or is ambiguous. */
const spanOffsets = new Map<string, number | null>();

/**
 * The offset (minutes) in force through the wall-clock span `[index × spanMs, (index + 1) × spanMs)` of `zone`, or null
 * when the span's first or last ms is in a DST gap or overlap, or their offsets differ. Equal offsets at both ends mean
 * one offset throughout: no zone's offset changes twice within a day (the tz database has no such pair of changes).
 */
function stableOffsetOf(index: number, spanMs: number, zone: string): number | null {
  const key = `${zone}|${spanMs}|${index}`;
  let off = spanOffsets.get(key);
  if (off === undefined) {
    const start = index * spanMs,
      end = start + spanMs - 1;
    const first = instantsForWallTime(start, zone);
    const last = instantsForWallTime(end, zone);
    off =
      first.length === 1 && last.length === 1 && first[0]! - start === last[0]! - end
        ? (start - first[0]!) / 60_000
        : null;
    if (spanOffsets.size >= 200_000) spanOffsets.clear();
    spanOffsets.set(key, off);
  }
  return off;
}

/** The offset in force through `wallUtcMs`'s whole wall-clock day, else through its hour, else null (a DST change's hour). */
function stableOffsetAround(wallUtcMs: number, zone: string): number | null {
  return (
    stableOffsetOf(Math.floor(wallUtcMs / DAY_MS), DAY_MS, zone) ??
    stableOffsetOf(Math.floor(wallUtcMs / HOUR_MS), HOUR_MS, zone)
  );
}

/**
 * Converts a wall-clock time in `zone` (given as if it were UTC, epoch ms) to
 * an instant. Returns null when the local time does not exist in that zone;
 * an ambiguous one gives the earlier instant. Days (else hours) with one offset
 * throughout are cached (ICU offset look-ups are slow, about 15 µs); others take the exact path.
 */
export function localToInstant(wallUtcMs: number, zone: string): number | null {
  const off = stableOffsetAround(wallUtcMs, zone);
  if (off !== null) return wallUtcMs - off * 60_000;
  return instantsForWallTime(wallUtcMs, zone)[0] ?? null;
}
