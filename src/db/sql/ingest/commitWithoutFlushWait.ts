/**
 * `SET LOCAL synchronous_commit = off`: the transaction's COMMIT returns
 * without waiting for its WAL to reach disk. It stays atomic; only a crash of
 * the server (or machine) within a fraction of a second after it may undo it
 * whole. Any later commit that does wait flushes the WAL up to its own record,
 * and so this one too: nothing durable can depend on it and then lose it.
 */
import type { PoolClient } from "../../pool.js";

export const COMMIT_WITHOUT_FLUSH_WAIT_SQL = "SET LOCAL synchronous_commit = off";

/** Lets the open transaction on `client` commit without waiting for the WAL flush (see above). */
async function commitWithoutFlushWait(client: PoolClient): Promise<void> {
  await client.query(COMMIT_WITHOUT_FLUSH_WAIT_SQL);
}
