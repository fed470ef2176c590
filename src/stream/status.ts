/**
 * What a pipeline's state is: ledger, checkpoint, last progress, windows.
 * Shared by the CLI's `status`/`replay` summary and the REST API.
 */
import type { Pool } from "../db/pool.js";
import { countSourcesByState, type SourceCounts } from "../db/sql/ingest/countSourcesByState.js";
import { readPipelineOwners } from "../db/sql/lifecycle/pipelineLeases.js";
import type { CheckpointInput } from "../core/model.js";
import { readCheckpoint } from "../db/sql/stream/readCheckpoint.js";
import { readStatusCounts } from "../db/sql/observe/readStatusCounts.js";

export interface PipelineStatus {
  pipeline: string;
  ledger: { landed: number; accepted: number; quarantined: number; quarantinedByReason: Record<string, number> };
  /** `lastOffset` is the last bronze `seq` the stream committed (Spark's offset). */
  /** `inputs`: each input's max event time, watermark and last ingestion time (docs/DESIGN.md "Several inputs"). */
  checkpoint: {
    batchId: number;
    lastOffset: number;
    maxEventTime: string | null;
    watermark: string | null;
    inputs: CheckpointInput[];
  } | null;
  /** Rows in bronze past the checkpoint: what the stream still has to read. */
  backlogRows: number;
  numRowsDroppedByWatermark: number;
  /** Windows recorded in `straggler.failed_windows` (an aggregate failed; their rows were quarantined). */
  failedWindows: number;
  windows: { open: number; final: number; corrected: number; awaitingCorrection: number };
  lastProgress: Record<string, unknown> | null;
  /** Sources (files, requests, replay micro-batches) by state: landed, refused, changed_after_landing, waiting_to_settle. */
  sources: SourceCounts;
  /** The replica (`straggler serve`) that owns the pipeline's stream now: its id (`host:pid` or `STRAGGLER_REPLICA_ID`); null when no service runs it. */
  owner: string | null;
}

/** Reads the status of `pipeline` (all counts are rows; instants ISO 8601 UTC). */
export async function pipelineStatus(pool: Pool, pipeline: string): Promise<PipelineStatus> {
  const checkpoint = await readCheckpoint(pool, pipeline);
  const [counts, sources, owners] = await Promise.all([
    readStatusCounts(pool, pipeline, checkpoint?.lastSeq ?? 0),
    countSourcesByState(pool, pipeline),
    readPipelineOwners(pool, [pipeline]),
  ]);
  const byStatus = counts.windowsByStatus;
  return {
    pipeline,
    ledger: { ...counts.ledger, quarantinedByReason: counts.quarantinedByReason },
    checkpoint: checkpoint
      ? {
          batchId: checkpoint.batchId,
          lastOffset: checkpoint.lastSeq,
          maxEventTime: checkpoint.maxEventTime,
          watermark: checkpoint.watermark,
          inputs: checkpoint.inputs,
        }
      : null,
    backlogRows: counts.backlogRows,
    numRowsDroppedByWatermark: counts.numRowsDroppedByWatermark,
    failedWindows: counts.failedWindows,
    windows: {
      open: byStatus.open ?? 0,
      final: byStatus.final ?? 0,
      corrected: byStatus.corrected ?? 0,
      awaitingCorrection: counts.awaitingCorrection,
    },
    lastProgress: counts.lastProgress,
    sources,
    owner: owners.get(pipeline) ?? null,
  };
}
