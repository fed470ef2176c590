/** Writes a batch's new checkpoint (DESIGN §6), in the batch's transaction. */
import type { PoolClient } from "../pool.js";
import type { Checkpoint } from "./readCheckpoint.js";

const SAVE_CHECKPOINT_SQL = `UPDATE straggler.checkpoints SET batch_id = $2, last_offset = $3, max_event_time = $4, watermark = $5, inputs = $6, updated_at = now() WHERE pipeline = $1`;

/** Sets the checkpoint of `pipeline` (a row `readCheckpointForUpdate` created and locked). Instants are ISO 8601 strings. */
export async function saveCheckpoint(client: PoolClient, pipeline: string, checkpoint: Checkpoint): Promise<void> {
  await client.query(SAVE_CHECKPOINT_SQL, [pipeline, checkpoint.batchId, checkpoint.lastSeq, checkpoint.maxEventTime, checkpoint.watermark, JSON.stringify(checkpoint.inputs)]);
}
