/** Describes a batch's input: its row counts and event-time statistics (Spark's `numInputRows`, `eventTime`). */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";
import type { BatchRange } from "./selectBatchRange.js";

/** Counts of bronze rows; instants are ISO 8601 UTC strings, null when the batch has no accepted row. */
export interface BatchInput {
  /** Accepted rows: the stream's input. */
  numInputRows: number;
  /** Quarantined rows in the range: landed, not stream input. */
  numQuarantinedRows: number;
  eventTime: { min: string | null; max: string | null; avg: string | null };
}

const READ_BATCH_INPUT = "stats";
const READ_BATCH_INPUT_SQL = `SELECT count(*) FILTER (WHERE status = 'accepted')::int AS accepted,
                count(*) FILTER (WHERE status <> 'accepted')::int AS quarantined,
                min(event_time) FILTER (WHERE status = 'accepted') AS min_et,
                max(event_time) FILTER (WHERE status = 'accepted') AS max_et,
                timestamptz 'epoch' + avg(extract(epoch from event_time)) FILTER (WHERE status = 'accepted') * interval '1 second' AS avg_et
           FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2 AND seq <= $3`;

/** The input of the batch `range` of `pipeline`. */
export async function readBatchInput(client: Queryable, pipeline: string, range: BatchRange): Promise<BatchInput> {
  const r = (await client.query(prepared(READ_BATCH_INPUT, READ_BATCH_INPUT_SQL, [pipeline, range.afterSeq, range.lastSeq]))).rows[0];
  return { numInputRows: r.accepted, numQuarantinedRows: r.quarantined, eventTime: { min: r.min_et, max: r.max_et, avg: r.avg_et } };
}
