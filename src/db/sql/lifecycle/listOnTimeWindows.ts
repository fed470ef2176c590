/**
 * Lists the on-time (key, window)s of the session's pairs table: the
 * candidates when a batch's MERGE failed and the failing windows are sought
 * (src/stream/isolateWindows.ts).
 */
import type { PoolClient } from "../../pool.js";
import { BATCH_PAIRS } from "../fragments/batchPairs.js";

/** One on-time (key, window) of the batch: `k` the stored group key, `w` the window start in epoch µs as text. */
export interface PairWindow {
  k: string;
  w: string;
}

const LIST_SQL = `SELECT DISTINCT group_key AS k, ws_us::text AS w FROM ${BATCH_PAIRS} WHERE NOT late ORDER BY 1, 2`;

/** The batch's on-time (key, window)s, ordered. */
export async function listOnTimeWindows(client: PoolClient): Promise<PairWindow[]> {
  return (await client.query(LIST_SQL)).rows as PairWindow[];
}
