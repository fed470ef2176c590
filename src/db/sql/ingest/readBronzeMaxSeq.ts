/** The highest bronze `seq` of one pipeline: a landing under the pipeline's append lock writes only above it. */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { inlineParams } from "../../inlineParams.js";

const READ_BRONZE_MAX_SEQ = "bronze_max_seq";
// A backward read of the (pipeline, seq) index in each partition.
const READ_BRONZE_MAX_SEQ_SQL = "SELECT coalesce(max(seq), 0) AS seq FROM straggler.bronze_events WHERE pipeline = $1";

/** The statement as text with `pipeline` inlined (for a multi-statement exchange): its one row's `seq`. */
export function bronzeMaxSeqText(pipeline: string): string {
  return inlineParams(READ_BRONZE_MAX_SEQ_SQL, [pipeline]);
}

/**
 * @returns the highest `seq` of `pipeline` in bronze, 0 when it has none
 * @throws the database's error
 */
export async function readBronzeMaxSeq(client: Queryable, pipeline: string): Promise<number> {
  return (await client.query(prepared(READ_BRONZE_MAX_SEQ, READ_BRONZE_MAX_SEQ_SQL, [pipeline]))).rows[0].seq as number;
}
