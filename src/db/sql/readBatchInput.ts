/** Describes a batch's input: its row counts and event-time statistics (Spark's `numInputRows`, `eventTime`). */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";
import type { BatchRange } from "./selectBatchRange.js";
import { notSuperseded } from "./fragments/superseded.js";

/** Counts of bronze rows; instants are ISO 8601 UTC strings, null when the batch has no accepted row. */
export interface BatchInput {
  /** Accepted rows, less those superseded by a later version up to the batch's end: the stream's input. */
  numInputRows: number;
  /** Quarantined rows in the range: landed, not stream input. */
  numQuarantinedRows: number;
  eventTime: { min: string | null; max: string | null; avg: string | null };
}

const READ_BATCH_INPUT = "stats";
// Input: accepted rows, less those a later version up to the batch's end superseded (fragments/superseded.ts).
const INPUT = `b.status = 'accepted' AND ${notSuperseded("b", "$3")}`;
const READ_BATCH_INPUT_SQL = `SELECT count(*) FILTER (WHERE ${INPUT})::int AS accepted,
                count(*) FILTER (WHERE b.status <> 'accepted')::int AS quarantined,
                min(b.event_time) FILTER (WHERE ${INPUT}) AS min_et,
                max(b.event_time) FILTER (WHERE ${INPUT}) AS max_et,
                timestamptz 'epoch' + avg(extract(epoch from b.event_time)) FILTER (WHERE ${INPUT}) * interval '1 second' AS avg_et
           FROM straggler.bronze_events b WHERE b.pipeline = $1 AND b.seq > $2 AND b.seq <= $3`;

/** The input of the batch `range` of `pipeline`. */
export async function readBatchInput(client: Queryable, pipeline: string, range: BatchRange): Promise<BatchInput> {
  const r = (await client.query(prepared(READ_BATCH_INPUT, READ_BATCH_INPUT_SQL, [pipeline, range.afterSeq, range.lastSeq]))).rows[0];
  return { numInputRows: r.accepted, numQuarantinedRows: r.quarantined, eventTime: { min: r.min_et, max: r.max_et, avg: r.avg_et } };
}
