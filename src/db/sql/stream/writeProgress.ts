/** A batch's progress (`straggler.batch_progress`; written by the batch's last statement, src/db/sql/stream/closeBatch.ts). */
import type { InputsAdvance } from "../../../core/watermark.js";
import { checkpointInputs } from "./checkpointInputs.js";
import type { CheckpointInput } from "./readCheckpoint.js";

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

/** The inputs of a batch's progress, from `advanceInputs`. */
export function inputProgress(a: InputsAdvance): InputProgress[] {
  return checkpointInputs(a.inputs).map((i) => ({ ...i, idle: a.idle.includes(i.input) }));
}
