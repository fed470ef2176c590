/**
 * Records of the domain that the query modules (src/db/sql) decode rows into and the features
 * take from them: owned here, beside the core's other shapes, so a query module and its readers
 * share them without importing each other. Instants are ISO 8601 UTC strings (µs kept); seqs are
 * bronze `seq`s.
 */

/** One pipeline's rows in a bronze partition (src/retention/archive.ts): how many, their greatest seq, their event-time range (null when none has one). */
export interface PipelineInPartition {
  pipeline: string;
  rows: number;
  maxSeq: number;
  minEventTime: string | null;
  maxEventTime: string | null;
}

/** A pipeline's checkpoint (`straggler.checkpoints`, src/db/sql/stream/readCheckpoint.ts): the stream's committed position in bronze and its event-time state (DESIGN §6). */
export interface Checkpoint {
  /** The last committed batch; -1 before the first. */
  batchId: number;
  /** The last bronze `seq` the stream has read (0 before the first batch). */
  lastSeq: number;
  /** Latest event time of the accepted rows read so far; null before any. */
  maxEventTime: string | null;
  /** The watermark the next batch uses; null until the first batch with an event time. */
  watermark: string | null;
  /** Each input's state, sorted by input (docs/DESIGN.md "Several inputs"); empty before the first accepted row. */
  inputs: CheckpointInput[];
}

/** One input's event-time state as of the checkpoint; instants ISO 8601 UTC, null while undefined. */
export interface CheckpointInput {
  input: string;
  /** Max accepted event time of the input's rows read so far. */
  maxEventTime: string | null;
  /** The input's own watermark: max event time − its delay, never backwards. */
  watermark: string | null;
  /** Max ingestion time of its accepted rows read so far (when it last sent); null when unknown. */
  lastIngestionTime: string | null;
}

/** What started a micro-batch, as its progress records it (`BatchProgress.trigger`). */
export type TriggerKind = "interval" | "once" | "available-now" | "replay" | "notify";

/** Progress of one batch, with Spark's StreamingQueryProgress names. Instants are ISO 8601 UTC strings. */
export interface BatchProgress {
  pipeline: string;
  batchId: number;
  trigger: TriggerKind;
  timestamp: string;
  /** Spark's offsets are bronze `seq`s: the batch read `startOffset < seq <= endOffset`. */
  startOffset: number;
  endOffset: number;
  /** Accepted rows in the batch's bronze range (quarantined rows are not stream input). */
  numInputRows: number;
  numQuarantinedRows: number;
  inputRowsPerSecond: number | null;
  processedRowsPerSecond: number | null;
  durationMs: number;
  eventTime: { min: string | null; max: string | null; avg: string | null; watermark: string | null };
  /** Watermark after this batch: what the next batch will use, and what finalized windows. */
  nextWatermark: string | null;
  /** Dropped (event, window) pairs — exact, unlike Spark's count of late groups. */
  numRowsDroppedByWatermark: number;
  numLateWindows: number;
  /** Windows MERGEd by this batch. */
  numRowsUpdated: number;
  numRowsFinalized: number;
  /** Open (not final) windows after the batch: Spark's state rows. */
  numRowsTotal: number;
  /** Every input's state after the batch, sorted by input (docs/DESIGN.md "Several inputs"). */
  inputs: InputProgress[];
}

/** One input's state after a batch (instants ISO 8601 UTC), and whether it was left out of the pipeline's watermark as idle (`watermark.idleTimeout`). */
export type InputProgress = CheckpointInput & { idle: boolean };

/** A bronze row that tripped a hold rule. */
export interface TrippingRow {
  seq: number;
  eventId: string;
  reason: string | null;
  detail: string | null;
}

/** One hold: `rule` null when held by hand; `releasedAt` null while it is open. */
export interface Hold {
  holdId: number;
  pipeline: string;
  reason: string;
  rule: "onFutureTs" | "quarantineShare" | null;
  trippedBy: { rows: TrippingRow[]; rowCount: number; [k: string]: unknown } | null;
  batchId: number | null;
  heldAt: string;
  releasedAt: string | null;
}
