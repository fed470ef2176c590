/** Quarantined rows per micro-batch and reason (views `straggler.stream_progress` and `straggler.quarantine`), for the pipeline page's chart. */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

const READ_QUARANTINE_BY_BATCH = "read_quarantine_by_batch";
/** A batch read the bronze rows `start_offset < seq <= end_offset`; its quarantined rows are those of the range. */
const READ_QUARANTINE_BY_BATCH_SQL = `SELECT p.batch_id, q.reason, count(*)::int AS n
  FROM straggler.stream_progress p
  JOIN straggler.quarantine q ON q.pipeline = p.pipeline AND q.seq > p.start_offset AND q.seq <= p.end_offset
 WHERE p.pipeline = $1 AND p.batch_id >= $2
 GROUP BY p.batch_id, q.reason
 ORDER BY p.batch_id, q.reason`;

/**
 * @param fromBatchId the first batch counted (batch ids are the stream's, from 1)
 * @returns one row per batch and reason with quarantined rows (batches without any are left out)
 * @throws the database's error when it cannot be reached
 */
export async function readQuarantineByBatch(
  client: Queryable,
  pipeline: string,
  fromBatchId: number,
): Promise<{ batchId: number; reason: string; rows: number }[]> {
  const r = await client.query(
    prepared(READ_QUARANTINE_BY_BATCH, READ_QUARANTINE_BY_BATCH_SQL, [pipeline, fromBatchId]),
  );
  return r.rows.map((row: { batch_id: number; reason: string; n: number }) => ({
    batchId: Number(row.batch_id),
    reason: row.reason,
    rows: row.n,
  }));
}
