/**
 * Marks `running` correction runs whose lease has passed, or whose holder is
 * gone (no session holds the run's holder lock: its process ended), as
 * `abandoned` (README "The correction job", DESIGN §9: a run's changes commit
 * only with `succeeded`, so an abandoned run's were rolled back).
 */
import { runHolderAliveSql } from "../../locks.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

/** `error` of a run abandoned for its lease; the `correction_history` view builds the same text. */
const LEASE_REASON_SQL = `'lease expired at ' || to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
  || ': the process running it stopped or lost the database before it finished; its changes were rolled back'`;

/** `error` of a run abandoned with its lease still running: its holder's session (and lock) are gone. */
const HOLDER_REASON_SQL = `'holder gone at ' || to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
  || ' (lease until ' || to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
  || '): the process running it ended, its database session and holder lock with it, before it finished; its changes were rolled back'`;

/** A running run is gone: its lease has passed, or no session holds its holder lock. */
const GONE_SQL = (alias: string) =>
  `(${alias}lease_until < clock_timestamp() OR NOT ${runHolderAliveSql(`${alias}run_id`)})`;

const SWEEP_EXPIRED_RUNS = "sweep_expired_runs";
const SWEEP_EXPIRED_RUNS_SQL = `UPDATE straggler.correction_runs r
   SET status = 'abandoned',
       finished_at = CASE WHEN r.lease_until < clock_timestamp() THEN r.lease_until ELSE clock_timestamp() END,
       error = CASE WHEN r.lease_until < clock_timestamp() THEN ${LEASE_REASON_SQL} ELSE ${HOLDER_REASON_SQL} END
  WHERE r.run_id IN (SELECT c.run_id FROM straggler.correction_runs c
                      WHERE c.status = 'running' AND ${GONE_SQL("c.")} AND ($1::text IS NULL OR c.pipeline = $1)
                      FOR UPDATE SKIP LOCKED)
    AND r.status = 'running' AND ${GONE_SQL("r.")}
 RETURNING r.run_id`;

/**
 * Marks every `running` run of `pipeline` (every pipeline when omitted) whose
 * lease has expired (database clock) as `abandoned`, `finished_at` = its
 * lease's end, `error` = "lease expired at …"; and every one whose holder is
 * gone — no session of this database holds its holder lock (pg_locks), so the
 * process running it has ended although its lease runs on — `finished_at` =
 * now, `error` = "holder gone at … (lease until …)". Rows locked by a live statement are
 * skipped, never waited for.
 * @returns the run ids marked, ascending
 * @throws the database's error when it cannot be reached
 */
export async function sweepExpiredRuns(client: Queryable, pipeline?: string): Promise<number[]> {
  const { rows } = await client.query(prepared(SWEEP_EXPIRED_RUNS, SWEEP_EXPIRED_RUNS_SQL, [pipeline ?? null]));
  return rows.map((r) => r.run_id as number).sort((a, b) => a - b);
}
