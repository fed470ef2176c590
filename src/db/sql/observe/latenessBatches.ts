/**
 * The batch boundaries a pipeline's stream recorded (`straggler.batch_progress`):
 * each batch covers `previous lastSeq < seq <= lastSeq`, in batch order.
 */
import { asc, eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import type { Queryable } from "../../pool.js";
import { batchProgress } from "../../schemaResults.js";

/** One recorded batch: its id, the last `seq` it read, the dropped (event, window) pairs and open windows it recorded. */
export interface RecordedBatch {
  batchId: number;
  /** The batch read `afterSeq < seq <= lastSeq` (its `start_offset`, `end_offset`). */
  afterSeq: number;
  lastSeq: number;
  numRowsDroppedByWatermark: number;
  numRowsTotal: number;
}

/**
 * Every recorded batch of `pipeline`, oldest first (one small row per batch).
 * @throws database errors
 */
export async function readRecordedBatches(client: Queryable, pipeline: string): Promise<RecordedBatch[]> {
  return drizzle(client)
    .select({
      batchId: batchProgress.batchId,
      afterSeq: batchProgress.startOffset,
      lastSeq: batchProgress.endOffset,
      numRowsDroppedByWatermark: batchProgress.numRowsDroppedByWatermark,
      numRowsTotal: batchProgress.numRowsTotal,
    })
    .from(batchProgress)
    .where(eq(batchProgress.pipeline, pipeline))
    .orderBy(asc(batchProgress.batchId));
}
