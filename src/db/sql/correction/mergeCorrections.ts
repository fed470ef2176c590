/**
 * Writes the changed windows of a correction run (`corr_changes`) into the
 * results: final, corrected, revision + 1 (1 for a window the results did
 * not have) — DESIGN §9.
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { CHANGE_COLUMNS, changeRow } from "../fragments/changeRows.js";
import { liveVersion } from "../fragments/liveVersion.js";

// With the change feed (`feed.enabled`), the run's changes are its rows in the change feed (src/db/sql/fragments/changeRows.ts), from the
// same rows in the same statement: before as the run read them, revision as the upsert writes it.
const FEED_CTE = `WITH feed AS (
  INSERT INTO straggler.window_changes (${CHANGE_COLUMNS}, run_id)
  SELECT ${changeRow({
    pipeline: "$1",
    change: "'corrected'",
    key: "group_key",
    start: "window_start",
    end: "window_end",
    revision: "coalesce(rev_before + 1, 1)",
    before: ["n_before", "s_before", "lo_before", "hi_before"],
    after: ["n", "s", "lo", "hi"],
  })}, $2
    FROM corr_changes ORDER BY group_key, window_start, window_end
)
`;

const MERGE_CORRECTIONS_SQL = `INSERT INTO straggler.window_results_table AS r
  (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final, corrected, revision)
SELECT $1, ${liveVersion()}, group_key, window_start, window_end, n, s, lo, hi, true, true, 1 FROM corr_changes
ON CONFLICT (pipeline, version, group_key, window_start, window_end) DO UPDATE
  SET event_count = excluded.event_count, value_sum = excluded.value_sum, value_min = excluded.value_min,
      value_max = excluded.value_max, is_final = true, corrected = true, revision = r.revision + 1, updated_at = now()`;

/**
 * Upserts every row of `corr_changes` into the results of `pipeline`.
 * @param feedRunId the run's id when the pipeline keeps a change feed: each row is a change of that run in the feed, written by the same statement; null: no feed
 */
export async function mergeCorrections(client: PoolClient, pipeline: string, feedRunId: number | null): Promise<void> {
  if (feedRunId === null) await client.query(prepared("merge_corrections", MERGE_CORRECTIONS_SQL, [pipeline]));
  else await client.query(prepared("merge_corrections_feed", FEED_CTE + MERGE_CORRECTIONS_SQL, [pipeline, feedRunId]));
}
