/**
 * Offsets of durable logs (`straggler.log_offsets`, migration 0021): per
 * pipeline, log and partition, the last offset whose message has landed.
 * Offsets are bigints (a NATS stream sequence and a Kafka offset are
 * unsigned 64-bit numbers).
 */
import type { Queryable } from "../../pool.js";

/** The partition name of a NATS stream's position (every message up to it has landed); never a subject token. */
export const POSITION_PARTITION = "*";

const READ_LOG_OFFSETS_SQL = `SELECT partition, last_offset::text AS last_offset FROM straggler.log_offsets WHERE pipeline = $1 AND log = $2`;

/**
 * The recorded offsets of `log` for `pipeline`.
 * @returns partition → last landed offset (absent: nothing of that partition has landed)
 * @throws the database's error
 */
export async function readLogOffsets(client: Queryable, pipeline: string, log: string): Promise<Map<string, bigint>> {
  const { rows } = await client.query<{ partition: string; last_offset: string }>(READ_LOG_OFFSETS_SQL, [
    pipeline,
    log,
  ]);
  return new Map(rows.map((r) => [r.partition, BigInt(r.last_offset)]));
}

/**
 * Moves a partition's offset from `expected` to `offset` (and counts `messages`), inserting
 * the row when `expected` is null. Nothing is written when the recorded offset is not
 * `expected`: another landing of the partition has committed since it was read.
 */
const ADVANCE_LOG_OFFSET_SQL = `INSERT INTO straggler.log_offsets AS o (pipeline, log, partition, last_offset, messages)
     VALUES ($1, $2, $3, $4::bigint, $5)
     ON CONFLICT (pipeline, log, partition) DO UPDATE SET last_offset = EXCLUDED.last_offset, messages = o.messages + EXCLUDED.messages, updated_at = now()
     WHERE o.last_offset = $6::bigint`;

/** The partition's offset was not the one the landing read: another landing of it committed meanwhile. Nothing was landed. */
export class LogOffsetMovedError extends Error {
  override name = "LogOffsetMovedError";
  constructor(
    readonly log: string,
    readonly partition: string,
  ) {
    super(
      `${log} partition ${JSON.stringify(partition)}: its offset moved while the batch landed (another consumer landed it); nothing was landed, the batch is read again`,
    );
  }
}

/**
 * Records that `partition` has landed up to `offset`, in the landing's transaction.
 * @param expected the offset read before landing (null: none recorded)
 * @throws LogOffsetMovedError when the recorded offset is no longer `expected` (the transaction must roll back)
 * @throws the database's error
 */
export async function advanceLogOffset(
  client: Queryable,
  row: { pipeline: string; log: string; partition: string; expected: bigint | null; offset: bigint; messages: number },
): Promise<void> {
  const { rowCount } = await client.query(ADVANCE_LOG_OFFSET_SQL, [
    row.pipeline,
    row.log,
    row.partition,
    String(row.offset),
    row.messages,
    row.expected === null ? null : String(row.expected),
  ]);
  if (rowCount !== 1) throw new LogOffsetMovedError(row.log, row.partition);
}

const RAISE_LOG_POSITION_SQL = `INSERT INTO straggler.log_offsets AS o (pipeline, log, partition, last_offset, messages)
     VALUES ($1, $2, $3, $4::bigint, $5)
     ON CONFLICT (pipeline, log, partition) DO UPDATE SET last_offset = EXCLUDED.last_offset, messages = o.messages + EXCLUDED.messages, updated_at = now()
     WHERE o.last_offset < EXCLUDED.last_offset`;

/**
 * Raises the log's position (partition `*`) to `offset`: every message of the log up to it
 * has landed. A position never goes back; a lower `offset` writes nothing.
 * @param messages messages the batch delivered (landed or found landed before)
 * @throws the database's error
 */
export async function raiseLogPosition(
  client: Queryable,
  pipeline: string,
  log: string,
  offset: bigint,
  messages: number,
): Promise<void> {
  await client.query(RAISE_LOG_POSITION_SQL, [pipeline, log, POSITION_PARTITION, String(offset), messages]);
}

const READ_LOG_OFFSET_ROWS_SQL = `SELECT pipeline, log, partition, last_offset::float8 AS last_offset FROM straggler.log_offsets WHERE pipeline = ANY($1) ORDER BY 1, 2, 3`;

/**
 * Every recorded offset of `pipelines`' logs, for the metrics (as numbers: exact up to 2^53).
 * @throws the database's error
 */
export async function readLogOffsetRows(
  client: Queryable,
  pipelines: string[],
): Promise<{ pipeline: string; log: string; partition: string; lastOffset: number }[]> {
  const { rows } = await client.query<{ pipeline: string; log: string; partition: string; last_offset: number }>(
    READ_LOG_OFFSET_ROWS_SQL,
    [pipelines],
  );
  return rows.map((r) => ({ pipeline: r.pipeline, log: r.log, partition: r.partition, lastOffset: r.last_offset }));
}
