/**
 * Marks `running` correction runs whose lease has passed as `abandoned`
 * (README "The correction job", DESIGN §9: a run's changes commit only with
 * `succeeded`, so an abandoned run's were rolled back).
 */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

/** `error` of an abandoned run; the `correction_history` view builds the same text. */
const ABANDONED_REASON_SQL = `'lease expired at ' || to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
  || ': the process running it stopped or lost the database before it finished; its changes were rolled back'`;

const SWEEP_EXPIRED_RUNS = "sweep_expired_runs";
const SWEEP_EXPIRED_RUNS_SQL = `UPDATE straggler.correction_runs r SET status = 'abandoned', finished_at = r.lease_until, error = ${ABANDONED_REASON_SQL}
  WHERE r.run_id IN (SELECT run_id FROM straggler.correction_runs
                      WHERE status = 'running' AND lease_until < clock_timestamp() AND ($1::text IS NULL OR pipeline = $1)
                      FOR UPDATE SKIP LOCKED)
    AND r.status = 'running' AND r.lease_until < clock_timestamp()
 RETURNING r.run_id`;

/**
 * Marks every `running` run of `pipeline` (every pipeline when omitted) whose
 * lease has expired (database clock) as `abandoned`, `finished_at` = its
 * lease's end, `error` = the reason. Rows locked by a live statement are
 * skipped, never waited for.
 * @returns the run ids marked, ascending
 * @throws the database's error when it cannot be reached
 */
export async function sweepExpiredRuns(client: Queryable, pipeline?: string): Promise<number[]> {
  const { rows } = await client.query(prepared(SWEEP_EXPIRED_RUNS, SWEEP_EXPIRED_RUNS_SQL, [pipeline ?? null]));
  return rows.map((r) => r.run_id as number).sort((a, b) => a - b);
}
