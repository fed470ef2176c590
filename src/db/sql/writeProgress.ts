/** Writes a batch's progress (`straggler.batch_progress`) and reads when the last one ran. */
import type { InputsAdvance } from "../../core/watermark.js";
import { checkpointInputs } from "./checkpointInputs.js";
import type { CheckpointInput } from "./readCheckpoint.js";
import type { Queryable } from "../pool.js";

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

const LAST_PROGRESS_TIME_SQL = "SELECT timestamp AS t FROM straggler.batch_progress WHERE pipeline = $1 ORDER BY batch_id DESC LIMIT 1";
const WRITE_PROGRESS_SQL = `INSERT INTO straggler.batch_progress (pipeline, batch_id, trigger, start_offset, end_offset, num_input_rows, num_quarantined_rows,
         input_rows_per_second, processed_rows_per_second, duration_ms, event_time_min, event_time_max, event_time_avg, watermark, next_watermark,
         num_rows_dropped_by_watermark, num_late_windows, num_rows_updated, num_rows_finalized, num_rows_total, timestamp, inputs)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22)`;

/** @returns the `timestamp` (ISO 8601) of the last batch of `pipeline`, or null before its first */
export async function readLastProgressTime(client: Queryable, pipeline: string): Promise<string | null> {
  return ((await client.query(LAST_PROGRESS_TIME_SQL, [pipeline])).rows[0]?.t ?? null) as string | null;
}

/** Inserts `progress` as one row of `straggler.batch_progress`, in the batch's transaction. @throws the database's error */
export async function writeProgress(client: Queryable, progress: BatchProgress): Promise<void> {
  await client.query(WRITE_PROGRESS_SQL, [
    progress.pipeline, progress.batchId, progress.trigger, progress.startOffset, progress.endOffset, progress.numInputRows, progress.numQuarantinedRows,
    progress.inputRowsPerSecond, progress.processedRowsPerSecond, progress.durationMs, progress.eventTime.min, progress.eventTime.max, progress.eventTime.avg, progress.eventTime.watermark, progress.nextWatermark,
    progress.numRowsDroppedByWatermark, progress.numLateWindows, progress.numRowsUpdated, progress.numRowsFinalized, progress.numRowsTotal, progress.timestamp, JSON.stringify(progress.inputs),
  ]);
}
