/**
 * The micro-batches that may have written a window (`straggler.batch_progress`): every batch
 * from the first that read one of its rows (`seq` > `fromSeq`) up to the first whose watermark
 * after it reaches the window's end (that batch finalized it; later batches never write it,
 * DESIGN §6), or up to the last batch while it is open. Instants are ISO 8601 UTC strings.
 */
import type { HistoryBatch } from "../../../core/historyTypes.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

/** One micro-batch: its bronze range and its watermarks. */
export type HistoryBatchRow = HistoryBatch;

const HISTORY_BATCHES_SQL = `SELECT batch_id, start_offset, end_offset, watermark, next_watermark, timestamp
  FROM straggler.batch_progress
 WHERE pipeline = $1 AND end_offset > $2
   AND batch_id <= coalesce((SELECT min(batch_id) FROM straggler.batch_progress WHERE pipeline = $1 AND end_offset > $2 AND next_watermark >= $3), 9223372036854775807)
 ORDER BY batch_id`;

/**
 * @param fromSeq batches that read a row after this `seq` (the window's first row's `seq` − 1)
 * @param end the window's end (ISO 8601): the batch whose watermark after it reaches it is the last
 * @throws the database's error when it cannot be reached
 */
export async function readHistoryBatches(
  client: Queryable,
  pipeline: string,
  fromSeq: number,
  end: string,
): Promise<HistoryBatchRow[]> {
  const { rows } = await client.query(
    prepared("explain_history_batches", HISTORY_BATCHES_SQL, [pipeline, fromSeq, end]),
  );
  return rows.map((r) => ({
    batchId: Number(r.batch_id),
    startOffset: Number(r.start_offset),
    endOffset: Number(r.end_offset),
    watermark: r.watermark as string | null,
    nextWatermark: r.next_watermark as string | null,
    at: r.timestamp as string,
  }));
}

const BATCHES_OF_SEQS_SQL = `SELECT DISTINCT bp.batch_id, bp.start_offset, bp.end_offset, bp.watermark, bp.next_watermark, bp.timestamp
  FROM unnest($2::bigint[]) AS s(seq)
  CROSS JOIN LATERAL (SELECT * FROM straggler.batch_progress p
                       WHERE p.pipeline = $1 AND p.start_offset < s.seq AND p.end_offset >= s.seq
                       ORDER BY batch_id DESC LIMIT 1) bp
 ORDER BY bp.batch_id`;

/**
 * The micro-batches that read `seqs` (a row landed after the last batch has none), by id.
 * @throws the database's error when it cannot be reached
 */
export async function readBatchesOfSeqs(
  client: Queryable,
  pipeline: string,
  seqs: number[],
): Promise<HistoryBatchRow[]> {
  if (seqs.length === 0) return [];
  const { rows } = await client.query(prepared("explain_batches_of_seqs", BATCHES_OF_SEQS_SQL, [pipeline, seqs]));
  return rows.map((r) => ({
    batchId: Number(r.batch_id),
    startOffset: Number(r.start_offset),
    endOffset: Number(r.end_offset),
    watermark: r.watermark as string | null,
    nextWatermark: r.next_watermark as string | null,
    at: r.timestamp as string,
  }));
}
