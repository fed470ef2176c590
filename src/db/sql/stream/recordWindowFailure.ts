/**
 * Records a window whose aggregate fails with a data exception
 * (src/db/windowFailures.ts finds them): its still-accepted rows are
 * quarantined (`INVALID_VALUE`, a detail naming the window and the error;
 * accepted + quarantined = landed still holds) and the window is recorded in
 * `straggler.window_failures`. The stored versions' classifications are kept
 * true against the rewritten rows (drizzle/0037: a row a stored version does
 * not hold is classified as bronze classifies it): each one whose checkpoint
 * covers a row and does not hold it keeps the row as it was, marked; the rows
 * held are marked where they now differ; the live version's own rows for them
 * (kept from its rebuild, equal to bronze's) go.
 */
import type { PoolClient } from "../../pool.js";
import { moveFailedRows } from "../observe/ledgerCounts.js";

const QUARANTINE_FAILED_ROWS_SQL = `UPDATE straggler.bronze_events SET status = 'quarantined', reason = 'INVALID_VALUE', detail = $3
      WHERE pipeline = $1 AND seq = ANY($2::bigint[]) AND status = 'accepted'`;
/* $1 pipeline, $2 seqs. Before the quarantine: the rows as they were, for the stored versions that do not hold them. */
const KEEP_STORED_SQL = `INSERT INTO straggler.event_classifications (pipeline, version, seq, event_id, event_time, group_key, value, status, reason, detail, differs)
SELECT $1, k.version, b.seq, b.event_id, b.event_time, b.group_key, b.value, b.status, b.reason, b.detail, true
  FROM straggler.version_checkpoints k
  JOIN straggler.bronze_events b ON b.pipeline = $1 AND b.seq = ANY ($2::bigint[]) AND b.status = 'accepted' AND b.seq <= k.last_offset
 WHERE k.pipeline = $1
ON CONFLICT (pipeline, version, seq) DO NOTHING`;
/* After it: the live version's rows for them go; every other version's rows for them are marked where they differ. */
const DROP_LIVE_ROWS_SQL = `DELETE FROM straggler.event_classifications c USING straggler.policy_versions v
 WHERE v.pipeline = $1 AND v.state = 'live' AND c.pipeline = $1 AND c.version = v.version AND c.seq = ANY ($2::bigint[])`;
const MARK_STORED_SQL = `UPDATE straggler.event_classifications c SET differs = true
  FROM straggler.bronze_events b
 WHERE c.pipeline = $1 AND c.seq = ANY ($2::bigint[]) AND NOT c.differs AND b.pipeline = $1 AND b.seq = c.seq
   AND (c.status, c.reason, c.detail, c.event_time, c.group_key, c.value) IS DISTINCT FROM (b.status, b.reason, b.detail, b.event_time, b.group_key, b.value)`;
const INSERT_WINDOW_FAILURE_SQL = `INSERT INTO straggler.window_failures (pipeline, group_key, window_start, window_end, phase, batch_id, run_id, sqlstate, error, quarantined_rows)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`;

/** A failing window as recorded: stored group key, bounds (ISO), the error, and the bronze rows quarantined for it. */
export interface WindowFailure {
  groupKey: string;
  windowStart: string;
  windowEnd: string;
  sqlstate: string;
  error: string;
  seqs: number[];
}

/** The detail written on each row quarantined for a failing window. */
function failureDetail(f: WindowFailure, phase: "stream" | "correction"): string {
  return `the ${phase === "stream" ? "micro-batch" : "correction"} could not aggregate window [${f.windowStart}, ${f.windowEnd}) of this key: ${f.error} (SQLSTATE ${f.sqlstate}); its rows of the ${phase === "stream" ? "batch" : "late events"} are quarantined`;
}

/**
 * Quarantines the still-accepted rows `f.seqs` of pipeline `pipeline` and records the window in `window_failures`.
 * @returns the number of rows quarantined
 * @throws the database's error
 */
export async function recordWindowFailure(
  client: PoolClient,
  pipeline: string,
  f: WindowFailure,
  at: { phase: "stream"; batchId: number } | { phase: "correction"; runId: number },
): Promise<number> {
  await client.query(KEEP_STORED_SQL, [pipeline, f.seqs]);
  const q = await client.query(QUARANTINE_FAILED_ROWS_SQL, [pipeline, f.seqs, failureDetail(f, at.phase)]);
  const n = q.rowCount ?? 0;
  if (n > 0) {
    await client.query(DROP_LIVE_ROWS_SQL, [pipeline, f.seqs]);
    await client.query(MARK_STORED_SQL, [pipeline, f.seqs]);
    await moveFailedRows(client, pipeline, "INVALID_VALUE", n);
  }
  await client.query(INSERT_WINDOW_FAILURE_SQL, [
    pipeline,
    f.groupKey,
    f.windowStart,
    f.windowEnd,
    at.phase,
    at.phase === "stream" ? at.batchId : null,
    at.phase === "correction" ? at.runId : null,
    f.sqlstate,
    f.error,
    n,
  ]);
  return n;
}
