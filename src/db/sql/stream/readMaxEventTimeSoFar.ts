/** The max event time seen up to each micro-batch (view `straggler.stream_progress`), for the pipeline page's event-time chart. */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

const READ_MAX_EVENT_TIME_SO_FAR = "read_max_event_time_so_far";
/** The running max over every batch of the pipeline, from its first: a batch of late rows only does not lower it. */
const READ_MAX_EVENT_TIME_SO_FAR_SQL = `SELECT batch_id, max_so_far
  FROM (SELECT batch_id, max(event_time_max) OVER (ORDER BY batch_id) AS max_so_far
          FROM straggler.stream_progress WHERE pipeline = $1) b
 WHERE batch_id >= $2
 ORDER BY batch_id`;

/**
 * @param fromBatchId the first batch answered (the max still counts every batch before it)
 * @returns per batch, the max accepted event time of it and every batch before (ISO 8601 UTC; null while no batch had an accepted row)
 * @throws the database's error when it cannot be reached
 */
export async function readMaxEventTimeSoFar(
  client: Queryable,
  pipeline: string,
  fromBatchId: number,
): Promise<{ batchId: number; maxEventTime: string | null }[]> {
  const r = await client.query(
    prepared(READ_MAX_EVENT_TIME_SO_FAR, READ_MAX_EVENT_TIME_SO_FAR_SQL, [pipeline, fromBatchId]),
  );
  return r.rows.map((row: { batch_id: number; max_so_far: string | null }) => ({
    batchId: Number(row.batch_id),
    maxEventTime: row.max_so_far,
  }));
}
