/**
 * Clears the "awaiting correction" marks of a run's target windows — only
 * up to the bronze snapshot it read (DESIGN §9): late rows that landed after
 * it stay marked for the next run.
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";

const CLEAR_LATE_EVENTS_SQL = `DELETE FROM straggler.late_events l USING corr_targets t
 WHERE l.pipeline = $1 AND l.group_key = t.group_key AND l.window_start = t.window_start AND l.window_end = t.window_end AND l.seq <= $2`;
const CLEAR_LATE_WINDOWS_SQL = `DELETE FROM straggler.late_windows l USING corr_targets t
 WHERE l.pipeline = $1 AND l.group_key = t.group_key AND l.window_start = t.window_start AND l.window_end = t.window_end AND l.max_seq <= $2`;

/** Deletes the late events and late windows of `corr_targets` in `pipeline` up to bronze `seq` `snapshot`. */
export async function clearLateMarks(client: PoolClient, pipeline: string, snapshot: number): Promise<void> {
  await client.query(prepared("clear_late_events", CLEAR_LATE_EVENTS_SQL, [pipeline, snapshot]));
  await client.query(prepared("clear_late_windows", CLEAR_LATE_WINDOWS_SQL, [pipeline, snapshot]));
}
