/**
 * What a batch read from each of its inputs (docs/DESIGN.md "Several inputs"):
 * per input, the max event time and the max ingestion time of its accepted
 * rows (less those superseded up to the batch's end, as `readBatchInput`).
 */
import type { InputBatch } from "../../core/watermark.js";
import { isoToUs } from "../../core/timestamps.js";
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";
import type { BatchRange } from "./selectBatchRange.js";
import { notSuperseded } from "./fragments/superseded.js";

const READ_BATCH_INPUTS = "batch_inputs";
const READ_BATCH_INPUTS_SQL = `SELECT b.input, max(b.event_time) AS max_et, max(b.ingestion_time) AS max_it
           FROM straggler.bronze_events b
          WHERE b.pipeline = $1 AND b.seq > $2 AND b.seq <= $3 AND b.status = 'accepted' AND ${notSuperseded("b", "$3")}
          GROUP BY b.input`;

/** Per input that sent accepted rows in the batch `range` of `pipeline`: its max event and ingestion time (epoch µs). */
export async function readBatchInputs(client: Queryable, pipeline: string, range: BatchRange): Promise<InputBatch[]> {
  const { rows } = await client.query(prepared(READ_BATCH_INPUTS, READ_BATCH_INPUTS_SQL, [pipeline, range.afterSeq, range.lastSeq]));
  return rows.map((r: { input: string; max_et: string | null; max_it: string | null }) => ({
    input: r.input,
    maxEventUs: r.max_et === null ? null : isoToUs(r.max_et),
    maxIngestionUs: r.max_it === null ? null : isoToUs(r.max_it),
  }));
}
