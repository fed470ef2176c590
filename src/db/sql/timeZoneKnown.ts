/** Whether PostgreSQL knows a time zone name (the zone check of a calendar window, src/stream/zoneGuard.ts). */
import type { Queryable } from "../pool.js";

// PostgreSQL reads zone names case-insensitively (`date_trunc('day', t, 'us/pacific')` works),
// so the lookup is too: a link kept as the user wrote it (`us/pacific`) is known.
const TIME_ZONE_KNOWN_SQL = "SELECT 1 FROM pg_timezone_names WHERE lower(name) = lower($1)";

/**
 * Looks `zone` up in `pg_timezone_names`, the zones this server's tz data has.
 * @param zone an IANA zone name, e.g. `America/New_York`
 * @returns true when PostgreSQL knows the zone (a window's bounds can be computed in it)
 * @throws the database's error when it cannot be reached
 */
export async function isTimeZoneKnown(client: Queryable, zone: string): Promise<boolean> {
  const r = await client.query(TIME_ZONE_KNOWN_SQL, [zone]);
  return (r.rowCount ?? 0) > 0;
}
