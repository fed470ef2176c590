/**
 * Reads a pipeline's checkpoint (`straggler.checkpoints`): the stream's
 * committed position in bronze and its event-time state (DESIGN §6). The one
 * read of the checkpoint for the stream, its status, the correction and
 * reconcile; the stream's batch locks it (`readCheckpointForUpdate`).
 */
import { DEFAULT_INPUT } from "../../core/watermark.js";
import type { PoolClient, Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

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
const LOCK_CHECKPOINT = "lock_checkpoint";
const LOCK_CHECKPOINT_SQL = `${READ_CHECKPOINT_SQL} FOR UPDATE`;

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

/**
 * The checkpoint of `pipeline`, created at its defaults when missing and
 * locked (`FOR UPDATE`) until `client`'s transaction ends: the batch that
 * holds it is the one that advances it.
 */
export async function readCheckpointForUpdate(client: PoolClient, pipeline: string): Promise<Checkpoint> {
  // One round trip once the row exists (every batch after a pipeline's first).
  const locked = (await client.query(prepared(LOCK_CHECKPOINT, LOCK_CHECKPOINT_SQL, [pipeline]))).rows[0];
  if (locked) return toCheckpoint(locked);
  await client.query(CREATE_CHECKPOINT_SQL, [pipeline]);
  const { rows } = await client.query(prepared(LOCK_CHECKPOINT, LOCK_CHECKPOINT_SQL, [pipeline]));
  return toCheckpoint(rows[0]);
}
