/**
 * A micro-batch's input (src/stream/runBatch.ts): read from bronze (src/db/sql/stream/readBatch.ts), or, for a
 * replay's span whose landing changed no row, taken from the span's summary made as it was classified
 * (src/db/sql/stream/feedBatch.ts): the same pairs and the same description, without reading the span back.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { sessionGapOf, windowSpecOf } from "../config/pipelines.js";
import { isoToUs } from "../core/instants.js";
import type { PoolClient } from "../db/pool.js";
import { feedBatch, feedsBatch, type LandedSpan } from "../db/sql/stream/feedBatch.js";
import { readBatch, type BatchRead } from "../db/sql/stream/readBatch.js";
import type { Checkpoint } from "../db/sql/stream/readCheckpoint.js";

/**
 * The input of the batch after `checkpoint`, its pairs in the session's pairs table (fixed-length and calendar
 * windows; session windows stage their own). `aggregateOnTime`: the on-time pairs one row per (key, window)
 * (readBatch's); only then may `landed` stand for the read (`feedsBatch` says when it can).
 * @returns the batch, or null when bronze holds nothing after the checkpoint (up to `untilSeq`)
 * @throws the database's error
 */
export async function batchInput(
  client: PoolClient,
  pipeline: PipelineConfig,
  checkpoint: Checkpoint,
  opts: { untilSeq?: number; aggregateOnTime: boolean; landed?: LandedSpan },
): Promise<BatchRead | null> {
  const maxRows = pipeline.trigger.maxRowsPerBatch;
  const watermarkUs = checkpoint.watermark === null ? null : isoToUs(checkpoint.watermark);
  if (
    opts.aggregateOnTime &&
    opts.untilSeq === opts.landed?.lastSeq &&
    feedsBatch(opts.landed, checkpoint.lastSeq, maxRows)
  )
    return feedBatch(client, pipeline.name, opts.landed, checkpoint.lastSeq, watermarkUs);
  return readBatch(client, pipeline.name, {
    afterSeq: checkpoint.lastSeq,
    maxRows,
    untilSeq: opts.untilSeq,
    windows:
      sessionGapOf(pipeline) === undefined
        ? { spec: windowSpecOf(pipeline), watermarkUs, aggregateOnTime: opts.aggregateOnTime }
        : undefined,
  });
}
