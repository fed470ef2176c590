/**
 * The ledger's counts as the stream keeps them (`straggler.ledger_counts`, drizzle/0043_ledger_counts.sql):
 * rows of each pipeline by status and reason, archived rows included, read in O(reasons) instead of a count
 * of bronze. A landing adds its counts through the trigger on `landed_sources` (nothing to call); the two
 * writes that reclassify landed rows move them here, in their own transaction: a failing window's
 * quarantine (`moveFailedRows`) and a cutover's restore (`moveRestoredRows`, before the restore's UPDATE).
 * Upserts go in (status, reason) order, as the trigger's, so no two transactions wait on each other's rows.
 */
import type { Queryable } from "../../pool.js";

/** One pipeline's counts (rows; `landed = accepted + quarantined`), quarantined rows by reason code, sorted by reason. */
export interface LedgerCounts {
  landed: number;
  accepted: number;
  quarantined: number;
  quarantinedByReason: Record<string, number>;
}

const READ_SQL = `SELECT pipeline, status, reason, rows FROM straggler.ledger_counts
  WHERE pipeline = ANY($1) AND rows <> 0 ORDER BY pipeline, status, reason`;

/**
 * The counts of each of `pipelines` (one index range read; a pipeline with no row gets zeros).
 * @throws the database's error
 */
export async function readLedgerCounts(client: Queryable, pipelines: string[]): Promise<Map<string, LedgerCounts>> {
  const out = new Map(
    pipelines.map((p) => [
      p,
      { landed: 0, accepted: 0, quarantined: 0, quarantinedByReason: {} as Record<string, number> },
    ]),
  );
  for (const r of (await client.query(READ_SQL, [pipelines])).rows as {
    pipeline: string;
    status: string;
    reason: string;
    rows: number;
  }[]) {
    const c = out.get(r.pipeline)!;
    c.landed += r.rows;
    if (r.status === "accepted") c.accepted += r.rows;
    else {
      c.quarantined += r.rows;
      c.quarantinedByReason[r.reason] = r.rows;
    }
  }
  return out;
}

const MOVE_SQL = `INSERT INTO straggler.ledger_counts AS c (pipeline, status, reason, rows)
  VALUES ($1, 'accepted', '', -$3::bigint), ($1, 'quarantined', $2, $3::bigint)
  ON CONFLICT (pipeline, status, reason) DO UPDATE SET rows = c.rows + EXCLUDED.rows`;

/**
 * Moves `rows` accepted rows of `pipeline` to quarantined with `reason` (a failing window's `INVALID_VALUE`),
 * in the transaction that reclassified them.
 * @throws the database's error
 */
export async function moveFailedRows(client: Queryable, pipeline: string, reason: string, rows: number): Promise<void> {
  if (rows > 0) await client.query(MOVE_SQL, [pipeline, reason, rows]);
}

/*
 * $1 pipeline, $2 the version restored. The rows the restore rewrites (the version's marked rows whose status or
 * reason differ from bronze's): each leaves bronze's (status, reason) and goes to the version's.
 */
const MOVE_RESTORED_SQL = `INSERT INTO straggler.ledger_counts AS c (pipeline, status, reason, rows)
SELECT $1, m.status, m.reason, sum(m.n)::bigint
  FROM straggler.event_classifications t JOIN straggler.bronze_events b ON b.pipeline = $1 AND b.seq = t.seq
 CROSS JOIN LATERAL (VALUES (b.status, coalesce(b.reason, ''), -1), (t.status, coalesce(t.reason, ''), 1)) AS m(status, reason, n)
 WHERE t.pipeline = $1 AND t.version = $2 AND t.differs AND (b.status, b.reason) IS DISTINCT FROM (t.status, t.reason)
 GROUP BY m.status, m.reason
HAVING sum(m.n) <> 0
 ORDER BY m.status, m.reason
ON CONFLICT (pipeline, status, reason) DO UPDATE SET rows = c.rows + EXCLUDED.rows`;

/**
 * Moves the rows a cutover's restore of `version` is about to reclassify between their counts; call it in the
 * cutover's transaction just before the restore rewrites bronze (O(the version's marked rows), as the restore).
 * @throws the database's error
 */
export async function moveRestoredRows(client: Queryable, pipeline: string, version: number): Promise<void> {
  await client.query(MOVE_RESTORED_SQL, [pipeline, version]);
}
