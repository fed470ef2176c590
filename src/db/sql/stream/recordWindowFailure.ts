/**
 * Records a window whose aggregate fails with a data exception
 * (src/db/windowFailures.ts finds them): its still-accepted rows are
 * quarantined (`INVALID_VALUE`, a detail naming the window and the error;
 * accepted + quarantined = landed still holds) and the window is recorded in
 * `straggler.window_failures`.
 */
import type { PoolClient } from "../../pool.js";

const QUARANTINE_FAILED_ROWS_SQL = `UPDATE straggler.bronze_events SET status = 'quarantined', reason = 'INVALID_VALUE', detail = $3
      WHERE pipeline = $1 AND seq = ANY($2::bigint[]) AND status = 'accepted'`;
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
export function failureDetail(f: WindowFailure, phase: "stream" | "correction"): string {
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
  const q = await client.query(QUARANTINE_FAILED_ROWS_SQL, [pipeline, f.seqs, failureDetail(f, at.phase)]);
  const n = q.rowCount ?? 0;
  await client.query(INSERT_WINDOW_FAILURE_SQL, [
    pipeline, f.groupKey, f.windowStart, f.windowEnd, at.phase, at.phase === "stream" ? at.batchId : null, at.phase === "correction" ? at.runId : null, f.sqlstate, f.error, n,
  ]);
  return n;
}
