/**
 * What a pipeline's live results hold that a policy change would invalidate (src/stream/policyGuard.ts):
 * a policy is adopted in place only when this is empty.
 */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

const RESULTS_FOOTPRINT = "results_footprint";
// Cheap checks first; the bronze probe reads the pipeline's rows in seq order until the first accepted one.
const RESULTS_FOOTPRINT_SQL = `SELECT
  EXISTS (SELECT 1 FROM straggler.window_results_table WHERE pipeline = $1) AS windows,
  EXISTS (SELECT 1 FROM straggler.late_windows WHERE pipeline = $1) AS late_windows,
  EXISTS (SELECT 1 FROM straggler.session_retractions WHERE pipeline = $1) AS retractions,
  EXISTS (SELECT 1 FROM straggler.held_window_results WHERE pipeline = $1) AS held,
  EXISTS (SELECT 1 FROM straggler.bronze_archived_counts WHERE pipeline = $1 AND status = 'accepted' AND rows > 0) AS archived,
  EXISTS (SELECT 1 FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'accepted' AND policy_version IS DISTINCT FROM $2) AS accepted`;

/** The kinds of stored results a policy change would invalidate, in words, in the order checked. */
const KINDS: [column: string, words: string][] = [
  ["windows", "window results"],
  ["late_windows", "windows awaiting correction"],
  ["retractions", "session retractions"],
  ["held", "held window results"],
  ["archived", "archived accepted rows"],
  ["accepted", "rows in bronze accepted under another policy"],
];

/**
 * What `pipeline`'s live results hold that the policy `policyVersion` (hash) did not make: window
 * results, windows awaiting correction, session retractions, held results, archived accepted rows,
 * and rows in bronze accepted under another policy (each bronze row is stamped with the policy it
 * was classified under when it landed; rows accepted under `policyVersion` itself are its own).
 * Quarantined rows are not results: they were refused under the policy they landed with and stay so.
 * @returns the kinds found, in words (empty: nothing to invalidate)
 * @throws the database's error when it cannot be reached
 */
export async function readResultsFootprint(client: Queryable, pipeline: string, policyVersion: string): Promise<string[]> {
  const row = (await client.query(prepared(RESULTS_FOOTPRINT, RESULTS_FOOTPRINT_SQL, [pipeline, policyVersion]))).rows[0] as Record<string, boolean>;
  return KINDS.filter(([column]) => row[column]).map(([, words]) => words);
}
