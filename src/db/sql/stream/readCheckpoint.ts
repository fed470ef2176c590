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

/** Instants are ISO 8601 UTC strings (µs kept). */
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
  const inputs = row.inputs ?? (row.max_event_time === null ? [] : [{ input: DEFAULT_INPUT, maxEventTime: row.max_event_time, watermark: row.watermark, lastIngestionTime: null }]);
  return { batchId: row.batch_id, lastSeq: row.last_offset, maxEventTime: row.max_event_time, watermark: row.watermark, inputs };
}

/** @returns the checkpoint of `pipeline`, or undefined before its first batch (no row yet) */
export async function readCheckpoint(client: Queryable, pipeline: string): Promise<Checkpoint | undefined> {
  const row = (await client.query(prepared(READ_CHECKPOINT, READ_CHECKPOINT_SQL, [pipeline]))).rows[0];
  return row && toCheckpoint(row);
}
