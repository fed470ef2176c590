/**
 * `SET LOCAL synchronous_commit = off`: the transaction's COMMIT returns
 * without waiting for its WAL to reach disk. It stays atomic; only a crash of
 * the server (or machine) within a fraction of a second after it may undo it
 * whole. Any later commit that does wait flushes the WAL up to its own record,
 * and so this one too: nothing durable can depend on it and then lose it.
 */
import type { Pool, PoolClient } from "../../pool.js";

export const COMMIT_WITHOUT_FLUSH_WAIT_SQL = "SET LOCAL synchronous_commit = off";

/** Lets the open transaction on `client` commit without waiting for the WAL flush (see above). */
async function commitWithoutFlushWait(client: PoolClient): Promise<void> {
  await client.query(COMMIT_WITHOUT_FLUSH_WAIT_SQL);
}

/**
 * Waits until every transaction committed so far, on any connection, is on disk: a transaction of its own
 * takes a transaction id (so that its COMMIT writes a record) and commits waiting for the WAL flush, which
 * reaches every earlier commit's record (the WAL is one sequence). A replay calls it once at its end.
 * @throws the database's error
 */
export async function flushCommits(pool: Pool): Promise<void> {
  await pool.query("BEGIN; SET LOCAL synchronous_commit = on; SELECT pg_current_xact_id(); COMMIT");
}
