/** Whether PostgreSQL knows a time zone name (the zone check of a calendar window, src/guards/timeZone.ts). */
import type { Queryable } from "../../pool.js";

// PostgreSQL reads zone names case-insensitively (`date_trunc('day', t, 'us/pacific')` works),
// so the lookup is too: a link kept as the user wrote it (`us/pacific`) is known.
const TIME_ZONE_KNOWN_SQL = "SELECT 1 FROM pg_timezone_names WHERE lower(name) = lower($1)";

/**
 * Looks `zone` up in `pg_timezone_names`, the zones this server's tz data has (once per zone
 * and process when found).
 * @param zone an IANA zone name, e.g. `America/New_York`
 * @returns true when PostgreSQL knows the zone (a window's bounds can be computed in it)
 * @throws the database's error when it cannot be reached
 */
export async function isTimeZoneKnown(client: Queryable, zone: string): Promise<boolean> {
  if (known.has(zone)) return true;
  const r = await client.query(TIME_ZONE_KNOWN_SQL, [zone]);
  if ((r.rowCount ?? 0) === 0) return false;
  known.add(zone);
  return true;
}

// The lookup reads the server's tz directory (about 50 ms) and runs before every micro-batch of a
// calendar pipeline, so a zone found once is remembered for the process: a server's zones change
// only with its tz data, on an upgrade. A zone not found is asked again each time (it may be fixed).
const known = new Set<string>();
