/**
 * Writes the changed windows of a correction run (`corr_changes`) into the
 * results: final, corrected, revision + 1 (1 for a window the results did
 * not have) — DESIGN §9.
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";

const MERGE_CORRECTIONS_SQL = `INSERT INTO straggler.window_results_table AS r
  (pipeline, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final, corrected, revision)
SELECT $1, group_key, window_start, window_end, n, s, lo, hi, true, true, 1 FROM corr_changes
ON CONFLICT (pipeline, group_key, window_start, window_end) DO UPDATE
  SET event_count = excluded.event_count, value_sum = excluded.value_sum, value_min = excluded.value_min,
      value_max = excluded.value_max, is_final = true, corrected = true, revision = r.revision + 1, updated_at = now()`;

/** Upserts every row of `corr_changes` into the results of `pipeline`. */
export async function mergeCorrections(client: PoolClient, pipeline: string): Promise<void> {
  await client.query(prepared("merge_corrections", MERGE_CORRECTIONS_SQL, [pipeline]));
}
