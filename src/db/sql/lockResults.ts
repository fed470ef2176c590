/** The pipeline's results lock: one writer at a time on its results, stream batches and correction runs (DESIGN §10). */
import { LockNamespace, XACT_LOCK_SQL } from "../locks.js";
import type { PoolClient } from "../pool.js";

/** Waits for and takes the results lock of `pipeline`, held until `client`'s transaction ends. */
export async function lockResults(client: PoolClient, pipeline: string): Promise<void> {
  await client.query(XACT_LOCK_SQL, [LockNamespace.results, pipeline]);
}
