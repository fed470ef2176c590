/**
 * Asks what became of a transaction whose answer to COMMIT was lost
 * (`txid_status`, PostgreSQL 10+), and ends the session that may still hold
 * it open (src/ingest/commitOutcome.ts).
 */
import type { Queryable } from "../../pool.js";

const READ_TXID_STATUS_SQL = "SELECT txid_status($1::bigint) AS status";
const TERMINATE_BACKEND_SQL = "SELECT pg_terminate_backend($1)";

/**
 * @param txid the text of the transaction's `txid_current()`
 * @returns `committed`, `aborted`, `in progress`, or null when the id is too old to tell
 * @throws the database's error
 */
export async function readTxidStatus(
  client: Queryable,
  txid: string,
): Promise<"committed" | "aborted" | "in progress" | null> {
  return (await client.query(READ_TXID_STATUS_SQL, [txid])).rows[0].status;
}

/**
 * Terminates the server process `backendPid` (`pg_terminate_backend`): its open transaction, if any, is rolled back.
 * @throws the database's error (e.g. without the privilege to signal it)
 */
export async function terminateBackend(client: Queryable, backendPid: number): Promise<void> {
  await client.query(TERMINATE_BACKEND_SQL, [backendPid]);
}
