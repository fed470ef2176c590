/**
 * The lifecycle of one correction run in `straggler.correction_runs`:
 * claim (insert as `running` with a lease), heartbeat (renew the lease),
 * finish (inside the run's own transaction), record a failure, and sweep
 * runs whose lease expired to `abandoned`.
 *
 * Rules (README "The correction job", DESIGN §9):
 * - A run holds a lease: `lease_until` = the database's clock + the lease
 *   (`correction.lease`, default 60 s), renewed every third of the lease on a
 *   pooled connection of its own while the run works. Database time is used
 *   throughout, so hosts with skewed clocks agree.
 * - A `running` run whose lease has passed is `abandoned` with a reason. It is
 *   written by whoever looks next: every run sweeps its pipeline before it
 *   claims, and the service sweeps every pipeline at start; the
 *   `correction_history` view shows such a run as `abandoned` even before.
 * - A run commits `succeeded` in the same transaction as its changes, and only
 *   while it is still `running`. So an abandoned run's changes were rolled
 *   back, always, and a run that outlived its lease (marked abandoned while
 *   it still worked) rolls back instead of committing.
 * - A cron slot is taken only by a run that succeeded or is running (partial
 *   unique index): a failed or abandoned slot can run again.
 */
import type { PoolClient } from "../db/pool.js";

/** What the lifecycle statements need: a pool or a client. */
export interface Queryable {
  query: PoolClient["query"];
}

/** `error` of an abandoned run; the `correction_history` view builds the same text. */
const ABANDONED_REASON_SQL = `'lease expired at ' || to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
  || ': the process running it stopped or lost the database before it finished; its changes were rolled back'`;

/**
 * Marks every `running` run of `pipeline` (every pipeline when omitted) whose
 * lease has expired as `abandoned`, `finished_at` = its lease's end, `error`
 * = the reason. Rows locked by a live statement are skipped, never waited for.
 * @returns the run ids marked, ascending
 */
export async function sweepExpiredRuns(db: Queryable, pipeline?: string): Promise<number[]> {
  const { rows } = await db.query(
    `UPDATE straggler.correction_runs r SET status = 'abandoned', finished_at = r.lease_until, error = ${ABANDONED_REASON_SQL}
      WHERE r.run_id IN (SELECT run_id FROM straggler.correction_runs
                          WHERE status = 'running' AND lease_until < clock_timestamp() AND ($1::text IS NULL OR pipeline = $1)
                          FOR UPDATE SKIP LOCKED)
        AND r.status = 'running' AND r.lease_until < clock_timestamp()
     RETURNING r.run_id`,
    [pipeline ?? null],
  );
  return rows.map((r) => r.run_id as number).sort((a, b) => a - b);
}

export interface RunClaim {
  pipeline: string;
  trigger: string;
  /** Scheduled minute of a cron run (ISO 8601). */
  cronSlot: string | null;
  range: { from: string; to: string } | null;
  /** As the client named them: null for the null group. */
  keys: (string | null)[] | null;
  /** Lease length, ms. */
  leaseMs: number;
}

/** The run that holds a cron slot: it succeeded, or is running with a live lease. */
export interface SlotHolder {
  runId: number;
  status: "running" | "succeeded";
  /** ISO 8601; for a running holder, when its lease ends unless renewed. */
  leaseUntil: string | null;
}

/**
 * Sweeps the pipeline's expired runs, then inserts the run as `running` with
 * a lease. A cron slot already held (succeeded, or running with a live lease)
 * is not claimed: the holder is returned instead.
 * @returns `{ runId }` when claimed, `{ heldBy }` when the slot is taken
 * @throws the database's error when it cannot be reached
 */
export async function claimRun(db: Queryable, claim: RunClaim): Promise<{ runId: number; heldBy?: undefined } | { runId?: undefined; heldBy: SlotHolder }> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    await sweepExpiredRuns(db, claim.pipeline);
    const inserted = await db.query(
      `INSERT INTO straggler.correction_runs (pipeline, trigger, cron_slot, range_start, range_end, group_keys, status, lease_until)
       VALUES ($1, $2, $3, $4, $5, $6, 'running', clock_timestamp() + $7 * interval '1 millisecond')
       ON CONFLICT DO NOTHING RETURNING run_id`,
      [claim.pipeline, claim.trigger, claim.cronSlot, claim.range?.from ?? null, claim.range?.to ?? null, claim.keys, claim.leaseMs],
    );
    if (inserted.rowCount === 1) return { runId: inserted.rows[0].run_id as number };
    const { rows } = await db.query(
      `SELECT run_id, status, lease_until, status = 'running' AND lease_until < clock_timestamp() AS expired
         FROM straggler.correction_runs WHERE pipeline = $1 AND cron_slot = $2 AND status IN ('running', 'succeeded')`,
      [claim.pipeline, claim.cronSlot],
    );
    const h = rows[0];
    if (h && !h.expired) return { heldBy: { runId: h.run_id, status: h.status, leaseUntil: h.lease_until } };
    // The holder failed, or its lease expired, between the insert and this read: sweep and claim again.
  }
  throw new Error(`could not claim cron slot ${claim.cronSlot} of pipeline ${claim.pipeline}: it changed hands three times while claiming`);
}

/**
 * Renews the run's lease every `everyMs` (default a third of the lease) on a
 * pooled connection, while the run works. A renewal that fails (database away)
 * is left: the next one tries again, and if none succeeds before the lease
 * ends, the run is abandoned and its transaction cannot commit `succeeded`.
 * `stop()` cancels the timer and waits for a renewal in flight.
 */
export function startHeartbeat(db: Queryable, runId: number, leaseMs: number, everyMs = Math.max(1, Math.floor(leaseMs / 3))): { stop(): Promise<void> } {
  let inFlight: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (inFlight) return; // the previous renewal is still waiting: never pile them up
    inFlight = db
      .query(
        `UPDATE straggler.correction_runs SET lease_until = clock_timestamp() + $2 * interval '1 millisecond'
          WHERE run_id = $1 AND status = 'running'`,
        [runId, leaseMs],
      )
      .catch(() => undefined)
      .finally(() => (inFlight = undefined));
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}

/** Raised inside a run's transaction when its row is no longer `running`: it was abandoned meanwhile. */
export class LeaseLostError extends Error {
  override name = "LeaseLostError";
}

export interface RunOutcome {
  bronzeSnapshot: number | null;
  windowsExamined: number;
  windowsChanged: number;
  eventsRecovered: number;
  durationMs: number;
}

/**
 * Records `succeeded` inside the run's transaction `c`, so the status commits
 * with the changes or not at all.
 * @throws LeaseLostError when the run is no longer `running` (its lease expired
 *   and someone marked it abandoned): the caller's transaction must roll back
 */
export async function finishRun(c: PoolClient, runId: number, o: RunOutcome): Promise<void> {
  const r = await c.query(
    `UPDATE straggler.correction_runs SET status = 'succeeded', bronze_snapshot = $2, windows_examined = $3, windows_changed = $4,
        events_recovered = $5, finished_at = clock_timestamp(), duration_ms = $6, error = NULL
      WHERE run_id = $1 AND status = 'running'
     RETURNING run_id`,
    [runId, o.bronzeSnapshot, o.windowsExamined, o.windowsChanged, o.eventsRecovered, o.durationMs],
  );
  if (r.rowCount === 0) {
    const now = await c.query("SELECT status, error FROM straggler.correction_runs WHERE run_id = $1", [runId]);
    const row = now.rows[0] as { status: string; error: string | null } | undefined;
    throw new LeaseLostError(
      row ? `run ${runId} was marked '${row.status}' while it worked (${row.error ?? "no reason recorded"}); it rolls back` : `run ${runId} is gone; it rolls back`,
    );
  }
}

/**
 * Records a failed run (outside its rolled-back transaction). When the row is
 * no longer `running`, it is left as it is and returned: `succeeded` means the
 * transaction did commit although its COMMIT's answer was lost; `abandoned`
 * means the lease expired first.
 * @returns the row as it now stands
 * @throws the database's error when it cannot be reached (the run then stays
 *   `running` until its lease expires, and is abandoned)
 */
export async function recordFailure(db: Queryable, runId: number, error: string, durationMs: number): Promise<{ status: string; error: string | null } & Partial<RunOutcome>> {
  const r = await db.query(
    `UPDATE straggler.correction_runs SET status = 'failed', finished_at = now(), duration_ms = $3, error = $2
      WHERE run_id = $1 AND status = 'running' RETURNING status, error`,
    [runId, error, durationMs],
  );
  if (r.rowCount === 1) return r.rows[0];
  const { rows } = await db.query(
    `SELECT status, error, bronze_snapshot AS "bronzeSnapshot", windows_examined AS "windowsExamined", windows_changed AS "windowsChanged",
            events_recovered AS "eventsRecovered", duration_ms AS "durationMs"
       FROM straggler.correction_runs WHERE run_id = $1`,
    [runId],
  );
  return rows[0];
}
