/**
 * Bronze's partitions (drizzle/0023_partitioned_bronze.sql): one per UTC
 * calendar month of `landed_at`, named `bronze_events_pYYYYMM`, plus
 * `bronze_events_default`. The service makes this month's and the next
 * (`ensurePartitions`); a landing outside them goes to the DEFAULT partition,
 * whose rows the next ensure moves into their month's partition.
 */
import type { Queryable } from "../../pool.js";

/** One partition of bronze: its name and `landed_at` bounds [rangeStart, rangeEnd) as ISO 8601 UTC (null bounds: the DEFAULT partition). */
export interface BronzePartition {
  name: string;
  rangeStart: string | null;
  rangeEnd: string | null;
}

const ENSURE_SQL = `SELECT straggler.ensure_bronze_partitions((now() AT TIME ZONE 'UTC')::date, ((now() AT TIME ZONE 'UTC') + interval '1 month')::date) AS made`;

// The bounds as PostgreSQL prints them (`FOR VALUES FROM ('2026-12-01 00:00:00+00') TO (…)`), read back as timestamptz.
const LIST_SQL = `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'straggler.bronze_events'::regclass
 ORDER BY c.relname`;

/**
 * Makes this month's and next month's partitions (UTC) when they do not exist
 * yet, moving rows the DEFAULT partition holds for those months.
 * @returns how many partitions were made
 * @throws database errors (a lock timeout while a long read holds bronze: retried on the next call)
 */
export async function ensurePartitions(db: Queryable): Promise<number> {
  const { rows } = await db.query(ENSURE_SQL);
  return rows[0].made as number;
}

/** `FROM ('2026-12-01 00:00:00+00') TO ('2026-12-02 00:00:00+00')` → ISO 8601 bounds. */
function parseBound(bound: string): { rangeStart: string | null; rangeEnd: string | null } {
  const m = /FROM \('([^']+)'\) TO \('([^']+)'\)/.exec(bound);
  if (!m) return { rangeStart: null, rangeEnd: null };
  return {
    rangeStart: new Date(m[1]!.replace(" ", "T").replace(/\+00$/, "Z")).toISOString(),
    rangeEnd: new Date(m[2]!.replace(" ", "T").replace(/\+00$/, "Z")).toISOString(),
  };
}

/** Bronze's partitions by name (the DEFAULT partition with null bounds). Sessions run in UTC (src/db/pool.ts), so bounds print as `+00`. */
export async function listPartitions(db: Queryable): Promise<BronzePartition[]> {
  const { rows } = await db.query(LIST_SQL);
  return rows.map((r) => ({ name: r.name as string, ...parseBound(r.bound as string) }));
}
