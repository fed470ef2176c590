/**
 * Reads a pipeline's checkpoint (`straggler.checkpoints`): the stream's
 * committed position in bronze and its event-time state (DESIGN §6), for the
 * stream's status, the correction and reconcile; the stream's batch reads and
 * locks it with its first statement (src/db/sql/stream/openBatch.ts, through
 * `toCheckpoint`).
 */
import { DEFAULT_INPUT } from "../../../core/watermark.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { Checkpoint, CheckpointInput } from "../../../core/model.js";

export type { Checkpoint, CheckpointInput };

const COLUMNS = "batch_id, last_offset, max_event_time, watermark, inputs";
const READ_CHECKPOINT = "read_checkpoint";
const READ_CHECKPOINT_SQL = `SELECT ${COLUMNS} FROM straggler.checkpoints WHERE pipeline = $1`;
export const CREATE_CHECKPOINT_SQL = "INSERT INTO straggler.checkpoints (pipeline) VALUES ($1) ON CONFLICT DO NOTHING";

/** A row of `straggler.checkpoints` (its columns batch_id, last_offset, max_event_time, watermark, inputs). */
export interface CheckpointRow {
  batch_id: number;
  last_offset: number;
  max_event_time: string | null;
  watermark: string | null;
  inputs: CheckpointInput[] | null;
}

/**
 * A checkpoint written before inputs were tracked (`inputs` null) has one input,
 * the default, with the checkpoint's max event time and watermark; when it last
 * sent is unknown.
 */
export function toCheckpoint(row: CheckpointRow): Checkpoint {
  const inputs =
    row.inputs ??
    (row.max_event_time === null
      ? []
      : [
          { input: DEFAULT_INPUT, maxEventTime: row.max_event_time, watermark: row.watermark, lastIngestionTime: null },
        ]);
  return {
    batchId: row.batch_id,
    lastSeq: row.last_offset,
    maxEventTime: row.max_event_time,
    watermark: row.watermark,
    inputs,
  };
}

/** @returns the checkpoint of `pipeline`, or undefined before its first batch (no row yet) */
export async function readCheckpoint(client: Queryable, pipeline: string): Promise<Checkpoint | undefined> {
  const row = (await client.query(prepared(READ_CHECKPOINT, READ_CHECKPOINT_SQL, [pipeline]))).rows[0];
  return row && toCheckpoint(row);
}
