/** Inserts a correction run as `running` under a lease (src/correction/runLease.ts). */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

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
const INSERT_RUN_SQL = `INSERT INTO straggler.correction_runs (pipeline, trigger, cron_slot, range_start, range_end, group_keys, status, lease_until)
VALUES ($1, $2, $3, $4, $5, $6, 'running', clock_timestamp() + $7 * interval '1 millisecond')
ON CONFLICT DO NOTHING RETURNING run_id`;

/**
 * Inserts the run with `lease_until` = the database's clock + `leaseMs`.
 * @returns its run id, or null when its cron slot is held (the partial unique
 *   index on (pipeline, cron_slot) among runs that succeeded or are running)
 * @throws the database's error when it cannot be reached
 */
export async function insertRun(client: Queryable, claim: RunClaim): Promise<number | null> {
  const { rows } = await client.query(
    prepared(INSERT_RUN, INSERT_RUN_SQL, [
      claim.pipeline, claim.trigger, claim.cronSlot, claim.range?.from ?? null, claim.range?.to ?? null, claim.keys, claim.leaseMs,
    ]),
  );
  return rows.length === 1 ? (rows[0].run_id as number) : null;
}
