/**
 * The window steps of a micro-batch for session windows (docs/DESIGN.md
 * "Session windows"), in the batch's transaction (src/stream/runBatch.ts):
 * stage the batch's events with their own windows and Spark's late rule →
 * record the late ones for the correction → merge the on-time ones into the
 * open sessions in update mode, removing superseded rows in the same
 * transaction and keeping them in `straggler.session_retractions`.
 * Finalizing (window end <= the new watermark) is the batch's common step.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { PoolClient } from "../db/pool.js";
import type { BatchRange } from "../db/sql/stream/readBatch.js";
import type { LatePairs } from "../db/sql/stream/registerLatePairs.js";
import { mergeSessions, registerLateSessionEvents, stageSessionEvents } from "../db/sql/stream/sessionStream.js";

/** What the window steps of a batch did: late pairs recorded, and results rows written. */
export interface WindowSteps {
  late: LatePairs;
  numRowsUpdated: number;
}

/**
 * Runs the session steps of batch `batchId` over `range`.
 * @param gapMs the pipeline's session gap, ms
 * @param watermarkUs the watermark of earlier batches, epoch µs; null before the first batch
 * @throws the database's error; the batch's transaction is rolled back
 */
export async function streamSessions(
  client: PoolClient,
  pipeline: PipelineConfig,
  gapMs: number,
  batch: { batchId: number; range: BatchRange; watermarkUs: bigint | null },
): Promise<WindowSteps> {
  await stageSessionEvents(client, pipeline.name, batch.range, batch.watermarkUs, gapMs);
  const late = await registerLateSessionEvents(client, pipeline.name, batch.batchId);
  const { written } = await mergeSessions(client, pipeline.name, batch.batchId, gapMs, pipeline.feed.enabled);
  return { late, numRowsUpdated: written };
}
