/** Tries a pipeline's bronze-append lock (DESIGN §10), never waiting for it (src/ingest/appendLock.ts). */
import { LockNamespace } from "../../locks.js";
import { inlineParams } from "../../inlineParams.js";
import type { PoolClient } from "../../pool.js";

const TRY_APPEND_LOCK_SQL = "SELECT pg_try_advisory_xact_lock($1::int, hashtext($2)) AS locked";

/**
 * Takes the lock for `client`'s open transaction if no other session holds it.
 * @returns true when taken (held until the transaction ends), false when another session holds it
 * @throws the database's error
 */
export async function tryAppendLock(client: PoolClient, pipeline: string): Promise<boolean> {
  const { rows } = await client.query(TRY_APPEND_LOCK_SQL, [LockNamespace.bronzeAppend, pipeline]);
  return rows[0].locked === true;
}

/**
 * The same try as SQL text without parameters, to send with other statements in one round trip
 * (`withAppendLockReading`, src/ingest/appendLock.ts); its one row's `locked` says whether it was taken.
 */
export function tryAppendLockText(pipeline: string): string {
  return inlineParams(TRY_APPEND_LOCK_SQL, [LockNamespace.bronzeAppend, pipeline]);
}
