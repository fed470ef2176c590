/**
 * What became of a transaction whose COMMIT was sent but whose answer never
 * came back (the connection dropped in between): it may have committed or
 * not, and only the database knows. Asked on another connection with
 * `txid_status` (PostgreSQL 10+); while the old session is still alive with
 * the transaction open, it is terminated, which decides the outcome
 * (committed if the COMMIT had arrived, aborted otherwise).
 */
import type { Pool } from "../db/pool.js";
import { backoffMs, sleep, type Backoff } from "../db/retry.js";
import { readTxidStatus, terminateBackend } from "../db/sql/ingest/readTxidStatus.js";

/** The landing's outcome could not be found out (the database stayed unreachable). */
export class CommitOutcomeUnknownError extends Error {
  override name = "CommitOutcomeUnknownError";
  constructor(
    readonly source: string,
    /** The last error met while asking. */
    readonly lookupError: unknown,
  ) {
    super(
      `the connection dropped after the landing of ${source} was committed or not; its outcome could not be found out`,
      { cause: lookupError },
    );
  }
}

/** How long to keep asking, ms: a database that restarts answers within this. */
const DEADLINE_MS = 10_000;
/** The wait between two lookups: 25 ms doubling, at most 500 ms. */
const LOOKUP_BACKOFF: Backoff = { baseMs: 25, capMs: 500 };
/** After this long in progress, the old session is terminated, ms. */
const TERMINATE_AFTER_MS = 1_000;

/**
 * Resolves the outcome of transaction `txid` (text of a `txid_current()`).
 * @param backendPid the process id of the lost session (`pg.Client.processID`), terminated if it still holds the transaction open
 * @returns `committed` or `aborted`; `unknown` when `txid_status` cannot tell (the id is too old: never within seconds)
 * @throws CommitOutcomeUnknownError when no connection answered within 10 s
 */
export async function commitOutcome(
  pool: Pool,
  txid: string,
  backendPid: number | undefined,
  source: string,
): Promise<"committed" | "aborted" | "unknown"> {
  const started = Date.now();
  let lastError: unknown;
  let terminated = false;
  for (let attempt = 1; Date.now() - started < DEADLINE_MS; attempt++) {
    try {
      const status = await readTxidStatus(pool, txid);
      if (status === "committed" || status === "aborted") return status;
      if (status === null) return "unknown";
      // In progress: the old session has not noticed its connection is gone yet.
      if (!terminated && backendPid !== undefined && Date.now() - started >= TERMINATE_AFTER_MS) {
        await terminateBackend(pool, backendPid);
        terminated = true;
      }
    } catch (e) {
      lastError = e;
    }
    await sleep(backoffMs(attempt, LOOKUP_BACKOFF));
  }
  throw new CommitOutcomeUnknownError(source, lastError);
}
