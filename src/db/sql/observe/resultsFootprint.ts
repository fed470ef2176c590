/**
 * What a pipeline's live results hold that a policy change would invalidate (src/stream/policyGuard.ts):
 * a policy is adopted in place only when this is empty.
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

const RESULTS_FOOTPRINT = "results_footprint";
// CASE stops at the first kind found, cheapest first: the bronze probe (which reads the pipeline's rows in seq order
// until one accepted under another policy) runs only when nothing else is there.
const RESULTS_FOOTPRINT_SQL = `SELECT CASE
  WHEN EXISTS (SELECT 1 FROM straggler.window_results_table WHERE pipeline = $1) THEN 'window results'
  WHEN EXISTS (SELECT 1 FROM straggler.late_windows WHERE pipeline = $1) THEN 'windows awaiting correction'
  WHEN EXISTS (SELECT 1 FROM straggler.session_retractions WHERE pipeline = $1) THEN 'session retractions'
  WHEN EXISTS (SELECT 1 FROM straggler.held_window_results WHERE pipeline = $1) THEN 'held window results'
  WHEN EXISTS (SELECT 1 FROM straggler.bronze_archived_counts WHERE pipeline = $1 AND status = 'accepted' AND rows > 0) THEN 'archived accepted rows'
  WHEN EXISTS (SELECT 1 FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'accepted' AND policy_version IS DISTINCT FROM $2)
    THEN 'rows in bronze accepted under another policy'
  END AS kind`;

/**
 * What `pipeline`'s live results hold that the policy `policyVersion` (hash) did not make: window
 * results, windows awaiting correction, session retractions, held results, archived accepted rows,
 * and rows in bronze accepted under another policy (each bronze row is stamped with the policy it
 * was classified under when it landed; rows accepted under `policyVersion` itself are its own).
 * Quarantined rows are not results: they were refused under the policy they landed with and stay so.
 * @returns the first kind found, in words, in the order above (empty: nothing to invalidate)
 * @throws the database's error when it cannot be reached
 */
export async function readResultsFootprint(client: Queryable, pipeline: string, policyVersion: string): Promise<string[]> {
  const kind = (await client.query(prepared(RESULTS_FOOTPRINT, RESULTS_FOOTPRINT_SQL, [pipeline, policyVersion]))).rows[0].kind as string | null;
  return kind === null ? [] : [kind];
}
