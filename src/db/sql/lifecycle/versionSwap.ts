/**
 * The swap of a cutover (src/lifecycle/cutover.ts), inside its transaction:
 * the live version's results, checkpoint, windows awaiting correction,
 * classification (bronze's classification columns) and supersessions are
 * stored under its version number, and another version's are put in their
 * place. Bronze's raw columns are never written.
 */
import { bronzeRaw } from "../fragments/bronzeRaw.js";
import type { Queryable } from "../../pool.js";

const RESULT_COLUMNS = "group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final, revision, corrected, last_batch_id, created_at, updated_at";
const LATE_COLUMNS = "group_key, window_start, window_end, dropped_rows, max_seq, first_batch_id, last_batch_id, registered_at";

/** Stores everything of the live version `version` of `pipeline` under that number (replacing what was stored of it before). */
export async function stashLive(client: Queryable, pipeline: string, version: number): Promise<void> {
  const p = [pipeline, version];
  for (const t of ["version_window_results", "version_checkpoints", "version_late_windows", "event_classifications", "superseded_versions"]) {
    await client.query(`DELETE FROM straggler.${t} WHERE pipeline = $1 AND version = $2`, p);
  }
  await client.query(`INSERT INTO straggler.version_window_results (pipeline, version, ${RESULT_COLUMNS}) SELECT pipeline, $2, ${RESULT_COLUMNS} FROM straggler.window_results_table WHERE pipeline = $1`, p);
  await client.query(
    `INSERT INTO straggler.version_checkpoints (pipeline, version, batch_id, last_offset, max_event_time, watermark, inputs)
     SELECT pipeline, $2, batch_id, last_offset, max_event_time, watermark, inputs FROM straggler.checkpoints WHERE pipeline = $1`,
    p,
  );
  await client.query(`INSERT INTO straggler.version_late_windows (pipeline, version, ${LATE_COLUMNS}) SELECT pipeline, $2, ${LATE_COLUMNS} FROM straggler.late_windows WHERE pipeline = $1`, p);
  await client.query(
    `INSERT INTO straggler.event_classifications (pipeline, version, seq, event_id, event_time, group_key, value, status, reason, detail)
     SELECT pipeline, $2, seq, event_id, event_time, group_key, value, status, reason, detail FROM straggler.bronze_events WHERE pipeline = $1`,
    p,
  );
  await client.query(
    "INSERT INTO straggler.superseded_versions (pipeline, version, seq, event_id, superseded_by) SELECT pipeline, $2, seq, event_id, superseded_by FROM straggler.superseded_events WHERE pipeline = $1",
    p,
  );
}

/**
 * Puts the stored version `version` of `pipeline` in the live places (results, checkpoint with batch id
 * `batchId`, windows awaiting correction, bronze's classification columns stamped `policyVersion`,
 * supersessions) and removes its stored copy.
 * @returns bronze rows whose classification changed
 */
export async function restoreVersion(client: Queryable, pipeline: string, version: number, policyVersion: string, batchId: number): Promise<number> {
  const p = [pipeline, version];
  await client.query("DELETE FROM straggler.window_results_table WHERE pipeline = $1", [pipeline]);
  await client.query(`INSERT INTO straggler.window_results_table (pipeline, ${RESULT_COLUMNS}) SELECT pipeline, ${RESULT_COLUMNS} FROM straggler.version_window_results WHERE pipeline = $1 AND version = $2`, p);
  await client.query(
    `INSERT INTO straggler.checkpoints AS c (pipeline, batch_id, last_offset, max_event_time, watermark, inputs, updated_at)
     SELECT pipeline, $3, last_offset, max_event_time, watermark, inputs, now() FROM straggler.version_checkpoints WHERE pipeline = $1 AND version = $2
     ON CONFLICT (pipeline) DO UPDATE SET batch_id = EXCLUDED.batch_id, last_offset = EXCLUDED.last_offset, max_event_time = EXCLUDED.max_event_time,
       watermark = EXCLUDED.watermark, inputs = EXCLUDED.inputs, updated_at = now()`,
    [pipeline, version, batchId],
  );
  await client.query("DELETE FROM straggler.late_windows WHERE pipeline = $1", [pipeline]);
  await client.query(`INSERT INTO straggler.late_windows (pipeline, ${LATE_COLUMNS}) SELECT pipeline, ${LATE_COLUMNS} FROM straggler.version_late_windows WHERE pipeline = $1 AND version = $2`, p);
  const changed = await client.query(
    `UPDATE straggler.bronze_events b
        SET status = c.status, reason = c.reason, detail = c.detail, event_time = c.event_time, group_key = c.group_key, value = c.value, policy_version = $3,
            -- A row kept without its raw text gets it before the columns that give it back change.
            raw = CASE WHEN b.raw IS NULL AND (b.event_time, b.group_key, b.value) IS DISTINCT FROM (c.event_time, c.group_key, c.value)
                       THEN ${bronzeRaw("b")} ELSE b.raw END
       FROM straggler.event_classifications c
      WHERE c.pipeline = $1 AND c.version = $2 AND c.seq = b.seq AND b.pipeline = $1
        AND (b.status, b.reason, b.detail, b.event_time, b.group_key, b.value, b.policy_version)
            IS DISTINCT FROM (c.status, c.reason, c.detail, c.event_time, c.group_key, c.value, $3)`,
    [pipeline, version, policyVersion],
  );
  await client.query("DELETE FROM straggler.superseded_events WHERE pipeline = $1", [pipeline]);
  await client.query("INSERT INTO straggler.superseded_events (seq, pipeline, event_id, superseded_by) SELECT seq, pipeline, event_id, superseded_by FROM straggler.superseded_versions WHERE pipeline = $1 AND version = $2", p);
  for (const t of ["version_window_results", "version_checkpoints", "version_late_windows", "event_classifications", "superseded_versions"]) {
    await client.query(`DELETE FROM straggler.${t} WHERE pipeline = $1 AND version = $2`, p);
  }
  return changed.rowCount ?? 0;
}

/** Makes `version` the live version of `pipeline` and the live one `retired`. */
export async function swapStates(client: Queryable, pipeline: string, version: number): Promise<void> {
  await client.query("UPDATE straggler.policy_versions SET state = 'retired' WHERE pipeline = $1 AND state = 'live'", [pipeline]);
  await client.query("UPDATE straggler.policy_versions SET state = 'live', live_since = now() WHERE pipeline = $1 AND version = $2", [pipeline, version]);
}

/** The highest batch id `pipeline` has used (its progress rows), or -1. */
export async function readMaxBatchId(client: Queryable, pipeline: string): Promise<number> {
  return Number((await client.query("SELECT coalesce(max(batch_id), -1) AS b FROM straggler.batch_progress WHERE pipeline = $1", [pipeline])).rows[0].b);
}
