/** The pipeline's results lock: one writer at a time on its results, stream batches and correction runs (DESIGN §10). */
import pg from "pg";
import { LockNamespace, XACT_LOCK_SQL } from "../../locks.js";
import type { PoolClient } from "../../pool.js";

/** Waits for and takes the results lock of `pipeline`, held until `client`'s transaction ends. */
export async function lockResults(client: PoolClient, pipeline: string): Promise<void> {
  await client.query(XACT_LOCK_SQL, [LockNamespace.results, pipeline]);
}

/**
 * A transaction's opening that takes the results lock of `pipeline` in the
 * same round trip: `BEGIN; SELECT pg_advisory_xact_lock(…)` (for
 * `inTransaction`'s `begin`; sent as one simple query, so the name is
 * written as an escaped literal). Each statement after it reads a snapshot
 * taken once the lock is held.
 */
export function beginLockingResults(pipeline: string): string {
  return `BEGIN; SELECT pg_advisory_xact_lock(${LockNamespace.results}, hashtext(${pg.escapeLiteral(pipeline)}))`;
}
