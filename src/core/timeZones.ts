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
/** Per (zone, wall-clock hour): the one offset in force through the whole hour, or null when it changes or is ambiguous. */
const hourOffsets = new Map<string, number | null>();

function stableOffsetOfHour(hour: number, zone: string): number | null {
  const key = `${zone}|${hour}`;
  let off = hourOffsets.get(key);
  if (off === undefined) {
    const first = instantsForWallTime(hour * HOUR_MS, zone);
    const last = instantsForWallTime(hour * HOUR_MS + HOUR_MS - 1, zone);
    off =
      first.length === 1 &&
      last.length === 1 &&
      first[0]! - hour * HOUR_MS === last[0]! - (hour * HOUR_MS + HOUR_MS - 1)
        ? (hour * HOUR_MS - first[0]!) / 60_000
        : null;
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
