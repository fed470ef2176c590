/**
 * What a pipeline's live results hold that a policy change would invalidate (src/guards/policy.ts):
 * a policy is adopted in place only when this is empty.
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { liveVersion } from "../fragments/liveVersion.js";

const RESULTS_FOOTPRINT = "results_footprint";
// CASE stops at the first kind found, cheapest first. The last probe reads the pipeline's landings (one row
// per landed file, request or replay span; never bronze's rows): the policy each landing's rows are
// classified under is recorded with it (drizzle/0037_classification_deltas.sql).
const RESULTS_FOOTPRINT_SQL = `SELECT CASE
  WHEN EXISTS (SELECT 1 FROM straggler.window_results_table WHERE pipeline = $1 AND version = ${liveVersion()}) THEN 'window results'
  WHEN EXISTS (SELECT 1 FROM straggler.late_windows WHERE pipeline = $1) THEN 'windows awaiting correction'
  WHEN EXISTS (SELECT 1 FROM straggler.session_retractions WHERE pipeline = $1) THEN 'session retractions'
  WHEN EXISTS (SELECT 1 FROM straggler.held_window_results WHERE pipeline = $1) THEN 'held window results'
  WHEN EXISTS (SELECT 1 FROM straggler.bronze_archived_counts WHERE pipeline = $1 AND status = 'accepted' AND rows > 0) THEN 'archived accepted rows'
  WHEN EXISTS (SELECT 1 FROM straggler.landed_sources WHERE pipeline = $1 AND first_seq IS NOT NULL AND accepted > 0 AND policy_version IS DISTINCT FROM $2)
    THEN 'rows in bronze accepted under another policy'
  END AS kind`;

/**
 * What `pipeline`'s live results hold that the policy `policyVersion` (hash) did not make: window
 * results, windows awaiting correction, session retractions, held results, archived accepted rows,
 * and rows in bronze accepted under another policy (a landing with accepted rows whose recorded
 * policy, `landed_sources.policy_version`, is another: each landing records the policy it classified
 * its rows under, and a cutover restamps the landings it reclassified; rows accepted under
 * `policyVersion` itself are its own). Quarantined rows are not results: they were refused under the
 * policy they landed with and stay so.
 * @returns the first kind found, in words, in the order above (empty: nothing to invalidate)
 * @throws the database's error when it cannot be reached
 */
export async function readResultsFootprint(
  client: Queryable,
  pipeline: string,
  policyVersion: string,
): Promise<string[]> {
  const kind = (await client.query(prepared(RESULTS_FOOTPRINT, RESULTS_FOOTPRINT_SQL, [pipeline, policyVersion])))
    .rows[0].kind as string | null;
  return kind === null ? [] : [kind];
}
