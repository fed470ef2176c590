/**
 * Fencing: a replica that has lost a pipeline's lease commits nothing more for
 * that pipeline — no micro-batch, no folder landing, no log landing, and none
 * of their bookkeeping (a landing-folder file recorded as waiting, refused,
 * changed or touched; a failing window's rows quarantined) — even when
 * it has not noticed yet (a long GC pause, a network cut to its lease
 * connection while a batch is in flight on a pooled connection).
 *
 * The lease is a session-level advisory lock (src/cluster/leases.ts); its
 * fencing token is an epoch, `straggler.pipeline_leases.epoch` (migration
 * 0027), raised by each replica that takes the lock, before it starts any
 * work, to the next value of a sequence: never handed out twice, even after
 * `straggler drop` removed the row (no old writer's epoch can come back). The owner keeps the epoch it raised; each transaction that commits
 * its work reads the row `FOR SHARE` as its last statement before COMMIT
 * (`assertLeaseHeld`) and rolls back (`LeaseLostError`) when the epoch is no
 * longer its own. The row lock makes the order total:
 *
 * - a writer that read the row first holds it until its COMMIT: the taker's
 *   UPDATE waits, so that commit comes before the taking, and the taker's
 *   work starts after it;
 * - a writer that reads it after the taking sees the new epoch (READ
 *   COMMITTED re-reads a row updated meanwhile) and rolls back.
 *
 * Why not check, in the writer's transaction, that the lease connection still
 * holds the advisory lock (`pg_locks`)? Reading `pg_locks` takes no lock: the
 * lease session can end the moment after the check, another replica take the
 * lock and commit its own work, and the checked transaction commit after it
 * all the same. A lock on a row both sides touch is what orders the two
 * commits. (A backend pid can also be reused by a later session.)
 *
 * The bookkeeping is fenced the same way: each record of a landing-folder
 * file's state is a transaction of its own ending with the fence
 * (src/ingest/landingFolder.ts), and so is the quarantine of a failing
 * window's rows (src/stream/isolateWindows.ts). Without a lease (a single
 * process, no replicas) nothing is fenced and those writes are as before.
 * HTTP ingest is not owned work: every replica lands requests.
 */
import { readLeaseEpochForShare } from "../db/sql/lifecycle/pipelineLeases.js";
import type { Queryable } from "../db/pool.js";

/** The lease a piece of owned work runs under (src/cluster/ownedWork.ts). */
export interface PipelineLease {
  readonly pipeline: string;
  /** The fencing token this replica raised when it took the lease (a bigint as a decimal string). */
  readonly epoch: string;
  /** False from the moment this replica lost or gave up this lease (a later taking has another epoch): check it before each unit of work. */
  owns(): boolean;
  /**
   * The fence: call it as the last statement of a transaction that commits the pipeline's
   * owned work. A LeaseLostError also stops the replica's work on the pipeline (logged once).
   * @throws LeaseLostError when another taking raised the epoch: the transaction must roll back
   */
  assertHeld(client: Queryable): Promise<void>;
}

/** The pipeline's lease was taken by another replica (or taken again) since this writer's epoch: its transaction rolled back. */
export class LeaseLostError extends Error {
  override name = "LeaseLostError";
  constructor(
    readonly pipeline: string,
    readonly epoch: string,
    readonly current: { epoch: string; owner: string } | undefined,
  ) {
    super(
      `pipeline ${pipeline}: the lease of epoch ${epoch} is no longer held (${current ? `epoch ${current.epoch}, taken by ${current.owner}` : "no lease recorded"}); ` +
        "the transaction rolled back and nothing of it was committed",
    );
  }
}

/**
 * Checks, in the caller's transaction, that `epoch` is still the fencing token of
 * `pipeline`'s lease, and keeps the token's row locked FOR SHARE until that
 * transaction ends (no taking can commit before it).
 * @throws LeaseLostError when the epoch has moved on (or no lease was ever recorded)
 * @throws the database's error
 */
export async function assertLeaseHeld(client: Queryable, pipeline: string, epoch: string): Promise<void> {
  const current = await readLeaseEpochForShare(client, pipeline);
  if (current?.epoch !== epoch) throw new LeaseLostError(pipeline, epoch, current);
}
