/** The stream's checkpoint as the correction and reconcile read it. */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

const READ_CHECKPOINT_SQL = "SELECT last_offset, watermark FROM straggler.checkpoints WHERE pipeline = $1";

/** @returns the last bronze `seq` the stream committed and its watermark (ISO 8601, null before it moved); undefined before the first batch */
export async function readCorrectionCheckpoint(client: Queryable, pipeline: string): Promise<{ lastSeq: number; watermark: string | null } | undefined> {
  const row = (await client.query(prepared("read_checkpoint", READ_CHECKPOINT_SQL, [pipeline]))).rows[0];
  return row && { lastSeq: row.last_offset, watermark: row.watermark };
}
