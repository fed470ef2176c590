/**
 * What a micro-batch reads first, under the pipeline's results lock, in one
 * statement: its checkpoint (DESIGN §6), locked `FOR UPDATE` until the
 * batch's transaction ends (the batch that holds it is the one that advances
 * it); the live results' policy (the policy guard's input,
 * src/guards/policy.ts); and when the previous batch ran (its progress
 * `timestamp`, for `inputRowsPerSecond`).
 */
import type { QueryResult } from "pg";
import { inlineParams } from "../../inlineParams.js";
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
 * The batch's first read as text, sent in the exchange that opens its transaction after the results lock
 * (`beginLockingResults(pipeline) + "; " + openBatchText(pipeline)`): BEGIN, the lock and this read in one round trip.
 */
export function openBatchText(pipeline: string): string {
  return inlineParams(OPEN_BATCH_SQL, [pipeline]);
}

/**
 * The checkpoint of `pipeline` (locked), its live policy and its previous batch's time, from `read`: the answer to
 * `openBatchText` in the transaction's opening exchange. When it found no checkpoint (a pipeline's first batch),
 * the checkpoint is created at its defaults and read again.
 * @throws the database's error
 */
export async function openBatchFrom(
  client: PoolClient,
  pipeline: string,
  read: QueryResult | undefined,
): Promise<BatchStart> {
  let row = read?.rows[0];
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
