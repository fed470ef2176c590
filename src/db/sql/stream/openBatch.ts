/**
 * What a micro-batch reads first, under the pipeline's results lock, in one
 * statement: its checkpoint (DESIGN §6), locked `FOR UPDATE` until the
 * batch's transaction ends (the batch that holds it is the one that advances
 * it); the live results' policy (the policy guard's input,
 * src/guards/policy.ts); and when the previous batch ran (its progress
 * `timestamp`, for `inputRowsPerSecond`).
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { toPolicyVersionRow, type PolicyVersionRow } from "./policyVersions.js";
import type { Checkpoint } from "../../../core/model.js";
import { CREATE_CHECKPOINT_SQL, toCheckpoint, type CheckpointRow } from "./readCheckpoint.js";

/** The batch's starting point. */
export interface BatchStart {
  checkpoint: Checkpoint;
  /** The live results version and its policy; null before the pipeline's policy was first recorded. */
  live: PolicyVersionRow | null;
  /** The previous batch's progress `timestamp` (ISO 8601 UTC); null before the first batch. */
  previous: string | null;
}

const OPEN_BATCH_SQL = `SELECT c.batch_id, c.last_offset, c.max_event_time, c.watermark, c.inputs,
       (SELECT p.timestamp FROM straggler.batch_progress p WHERE p.pipeline = $1 ORDER BY p.batch_id DESC LIMIT 1) AS previous,
       v.version, v.state, v.policy_version, v.policy, v.created_at, v.live_since
  FROM straggler.checkpoints c
  LEFT JOIN straggler.policy_versions v ON v.pipeline = $1 AND v.state = 'live'
 WHERE c.pipeline = $1
   FOR UPDATE OF c`;

/**
 * Reads and locks the checkpoint of `pipeline` (created at its defaults when
 * missing), with its live policy and its previous batch's time. Call inside
 * the batch's transaction, after taking the results lock: what it reads is
 * then what the batch extends.
 * @throws the database's error
 */
export async function openBatch(client: PoolClient, pipeline: string): Promise<BatchStart> {
  // One round trip once the checkpoint exists (every batch after a pipeline's first).
  let row = (await client.query(prepared("open_batch", OPEN_BATCH_SQL, [pipeline]))).rows[0];
  if (!row) {
    await client.query(CREATE_CHECKPOINT_SQL, [pipeline]);
    row = (await client.query(prepared("open_batch", OPEN_BATCH_SQL, [pipeline]))).rows[0];
  }
  return {
    checkpoint: toCheckpoint(row as CheckpointRow),
    live: row.version === null ? null : toPolicyVersionRow(row),
    previous: row.previous as string | null,
  };
}
