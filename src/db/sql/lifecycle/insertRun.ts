/** Inserts a correction run as `running` under a lease (src/correction/runLease.ts). */
import type { Queryable } from "../../pool.js";
import { LockNamespace, runHolderKeySql } from "../../locks.js";
import { prepared } from "../../prepared.js";

export interface RunClaim {
  pipeline: string;
  trigger: string;
  /** Scheduled minute of a cron run (ISO 8601). */
  cronSlot: string | null;
  /** ISO instants, `[from, to)`. */
  range: { from: string; to: string } | null;
  /** As the client named them: null for the null group. */
  keys: (string | null)[] | null;
  /** Lease length, ms. */
  leaseMs: number;
}

const INSERT_RUN = "insert_run";
// One statement: the holder lock is taken before the row commits, so no one ever sees the run without its holder.
const INSERT_RUN_SQL = `WITH run AS (
  INSERT INTO straggler.correction_runs (pipeline, trigger, cron_slot, range_start, range_end, group_keys, status, lease_until)
  VALUES ($1, $2, $3, $4, $5, $6, 'running', clock_timestamp() + $7 * interval '1 millisecond')
  ON CONFLICT DO NOTHING RETURNING run_id)
SELECT run_id, pg_advisory_lock(${LockNamespace.correctionRun}, ${runHolderKeySql("run_id")})::text AS held FROM run`;

/**
 * Inserts the run with `lease_until` = the database's clock + `leaseMs`, and takes its holder
 * lock (session-level, namespace `correctionRun`) on `holder`'s session in the same statement:
 * the run is alive while that session lives (src/correction/runLease.ts). `holder` must be a
 * connection of its own, kept until the run has finished, then unlocked (`releaseRunHolder`).
 * @returns its run id, or null when its cron slot is held (the partial unique
 *   index on (pipeline, cron_slot) among runs that succeeded or are running)
 * @throws the database's error when it cannot be reached
 */
export async function insertRun(holder: Queryable, claim: RunClaim): Promise<number | null> {
  const { rows } = await holder.query(
    prepared(INSERT_RUN, INSERT_RUN_SQL, [
      claim.pipeline,
      claim.trigger,
      claim.cronSlot,
      claim.range?.from ?? null,
      claim.range?.to ?? null,
      claim.keys,
      claim.leaseMs,
    ]),
  );
  return rows.length === 1 ? (rows[0].run_id as number) : null;
}

const RELEASE_RUN_HOLDER = "release_run_holder";
const RELEASE_RUN_HOLDER_SQL = `SELECT pg_advisory_unlock(${LockNamespace.correctionRun}, ${runHolderKeySql("$1::bigint")}) AS released`;

/**
 * Releases the holder lock `insertRun` took on `holder` for `runId`, once the run has finished.
 * @returns false when the session did not hold it (a new session after a lost connection)
 * @throws the database's error when it cannot be reached
 */
export async function releaseRunHolder(holder: Queryable, runId: number): Promise<boolean> {
  const { rows } = await holder.query(prepared(RELEASE_RUN_HOLDER, RELEASE_RUN_HOLDER_SQL, [runId]));
  return rows[0].released === true;
}
