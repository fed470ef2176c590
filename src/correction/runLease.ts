/**
 * The lifecycle of one correction run in `straggler.correction_runs`:
 * claim (insert as `running` with a lease), heartbeat (renew the lease),
 * finish (inside the run's own transaction), record a failure, and sweep
 * runs whose lease expired to `abandoned`.
 *
 * Rules (README "The correction job", DESIGN §9):
 * - A run has a holder: a pooled connection of its own, checked out for the
 *   whole run, whose session holds the run's holder lock (a session-level
 *   advisory lock, namespace `correctionRun`, taken in the statement that
 *   inserts the run). When the process dies (SIGKILL, crash), PostgreSQL ends
 *   the session and the lock goes with it: the run is known to be gone at
 *   once (pg_locks), whatever its lease says.
 * - A run holds a lease: `lease_until` = the database's clock + the lease
 *   (`correction.lease`, default 60 s), renewed every third of the lease on
 *   the holder connection while the run works. Database time is used
 *   throughout, so hosts with skewed clocks agree. The lease covers a holder
 *   whose session lives on while its process cannot reach the database.
 * - A `running` run whose lease has passed, or whose holder is gone, is
 *   `abandoned` with a reason. It is written by whoever looks next: every run
 *   sweeps its pipeline before it claims, and the service sweeps every
 *   pipeline at start; the `correction_history` view shows a run whose lease
 *   has passed as `abandoned` even before.
 * - A run commits `succeeded` in the same transaction as its changes, and only
 *   while it is still `running`. So an abandoned run's changes were rolled
 *   back, always, and a run that outlived its lease (marked abandoned while
 *   it still worked) rolls back instead of committing.
 * - A cron slot is taken only by a run that succeeded or is running (partial
 *   unique index): a failed or abandoned slot can run again.
 */
import type { PoolClient, Queryable } from "../db/pool.js";
import type { Pool } from "../db/pool.js";
import { insertRun, releaseRunHolder, type RunClaim } from "../db/sql/lifecycle/insertRun.js";
import { markRunFailed } from "../db/sql/lifecycle/markRunFailed.js";
import { markRunSucceeded, type RunOutcome } from "../db/sql/lifecycle/markRunSucceeded.js";
import { readRun, type RunState } from "../db/sql/lifecycle/readRun.js";
import { readSlotHolder, type SlotHolder } from "../db/sql/lifecycle/readSlotHolder.js";
import { renewLease } from "../db/sql/lifecycle/renewLease.js";
import { sweepExpiredRuns } from "../db/sql/lifecycle/sweepExpiredRuns.js";
import { startLoop } from "../loop.js";

export { sweepExpiredRuns };
export type { RunClaim, RunOutcome, SlotHolder };

/**
 * Sweeps the pipeline's expired runs and those whose holder is gone, then inserts the run as
 * `running` with a lease, its holder lock taken on `client`'s session (which must stay checked
 * out until the run has finished: `holdRun` does all this). A cron slot already held (succeeded,
 * or running with a live lease and holder) is not claimed: the holder is returned instead.
 * @returns `{ runId }` when claimed, `{ heldBy }` when the slot is taken
 * @throws the database's error when it cannot be reached
 */
async function claimRun(
  client: Queryable,
  claim: RunClaim,
): Promise<{ runId: number; heldBy?: undefined } | { runId?: undefined; heldBy: SlotHolder }> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    await sweepExpiredRuns(client, claim.pipeline);
    const runId = await insertRun(client, claim);
    if (runId !== null) return { runId };
    const heldBy = await readSlotHolder(client, claim.pipeline, claim.cronSlot);
    if (heldBy) return { heldBy };
    // The holder failed, its lease expired or its process ended between the insert and this read: sweep and claim again.
  }
  throw new Error(
    `could not claim cron slot ${claim.cronSlot} of pipeline ${claim.pipeline}: it changed hands three times while claiming`,
  );
}

/**
 * Renews the run's lease every `everyMs` (default a third of the lease) on a
 * pooled connection, while the run works. A renewal that fails (database away)
 * is left: the next one tries again, and if none succeeds before the lease
 * ends, the run is abandoned and its transaction cannot commit `succeeded`.
 * `stop()` ends the wait and waits for a renewal in flight (src/loop.ts).
 */
function startHeartbeat(
  client: Queryable,
  runId: number,
  leaseMs: number,
  everyMs = Math.max(1, Math.floor(leaseMs / 3)),
): { stop(): Promise<void> } {
  // One renewal at a time (the loop's rounds never overlap); a failed one is left for the next, `everyMs` later.
  const loop = startLoop(async () => void (await renewLease(client, runId, leaseMs)), {
    intervalMs: everyMs,
    immediate: false,
    unref: true,
    onError: () => undefined,
  });
  return { stop: () => loop.stop() };
}

/** A claimed run's holder: its lease renewals and holder lock, until `stop()`. */
export interface RunHold {
  runId: number;
  /** Stops renewing, releases the holder lock and gives the connection back (destroyed when it broke). Never throws. */
  stop(): Promise<void>;
}

/**
 * Claims a run (`claimRun`) on a connection of its own from `pool`, kept for the whole run: its
 * session holds the run's holder lock, and renews the lease every `everyMs` (`startHeartbeat`).
 * @returns `{ hold }` when claimed, `{ heldBy }` when the cron slot is held (the connection is given back)
 * @throws the database's error when it cannot be reached (nothing is left checked out)
 */
export async function holdRun(
  pool: Pool,
  claim: RunClaim,
  everyMs?: number,
): Promise<{ hold: RunHold; heldBy?: undefined } | { hold?: undefined; heldBy: SlotHolder }> {
  const holder = await pool.connect();
  let broken: Error | undefined;
  const onError = (e: Error) => (broken = e); // a connection lost while checked out: destroyed on release
  holder.on("error", onError);
  const giveBack = () => {
    holder.off("error", onError);
    holder.release(broken);
  };
  let claimed: Awaited<ReturnType<typeof claimRun>>;
  try {
    claimed = await claimRun(holder, claim);
  } catch (e) {
    broken = e as Error;
    giveBack();
    throw e;
  }
  if (claimed.heldBy) {
    giveBack();
    return { heldBy: claimed.heldBy };
  }
  const runId = claimed.runId;
  const heartbeat = startHeartbeat(holder, runId, claim.leaseMs, everyMs);
  return {
    hold: {
      runId,
      async stop() {
        await heartbeat.stop();
        try {
          if (!broken) await releaseRunHolder(holder, runId);
        } catch (e) {
          broken = e as Error; // the session is gone, and its lock with it
        }
        giveBack();
      },
    },
  };
}

/** Raised inside a run's transaction when its row is no longer `running`: it was abandoned meanwhile. */
class LeaseLostError extends Error {
  override name = "LeaseLostError";
}

/**
 * Records `succeeded` inside the run's transaction `client`, so the status commits
 * with the changes or not at all.
 * @throws LeaseLostError when the run is no longer `running` (its lease expired
 *   and someone marked it abandoned): the caller's transaction must roll back
 */
export async function finishRun(client: PoolClient, runId: number, outcome: RunOutcome): Promise<void> {
  if (await markRunSucceeded(client, runId, outcome)) return;
  const row = await readRun(client, runId);
  throw new LeaseLostError(
    row
      ? `run ${runId} was marked '${row.status}' while it worked (${row.error ?? "no reason recorded"}); it rolls back`
      : `run ${runId} is gone; it rolls back`,
  );
}

/**
 * Records a failed run (outside its rolled-back transaction). When the row is
 * no longer `running`, it is left as it is and returned: `succeeded` means the
 * transaction did commit although its COMMIT's answer was lost; `abandoned`
 * means the lease expired first.
 * @returns the row as it now stands (undefined when the run is gone)
 * @throws the database's error when it cannot be reached (the run then stays
 *   `running` until its lease expires, and is abandoned)
 */
export async function recordFailure(
  client: Queryable,
  runId: number,
  error: string,
  durationMs: number,
): Promise<{ status: string; error: string | null } & Partial<RunState>> {
  if (await markRunFailed(client, runId, error, durationMs)) return { status: "failed", error };
  return (await readRun(client, runId))!;
}
