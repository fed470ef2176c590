/** The bronze `seq` range a landing wrote: its rows are the pipeline's rows above bronze's seq high water before it. */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

const READ_LANDED_RANGE = "bronze_landed_range";
// The (pipeline, seq) index's range (pipeline, seq) > ($1, $2) (see dedupeLanding.ts).
const READ_LANDED_RANGE_SQL =
  "SELECT min(seq) AS first_seq, max(seq) AS last_seq FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2";

/**
 * @param seqBefore bronze's seq high water read under the append lock before the landing (`bronzeSeqHighWaterText`: every row of the pipeline before is at most it)
 * @returns the lowest and highest `seq` of `pipeline` above `seqBefore`; both null when there is none
 * @throws the database's error
 */
export async function readLandedRange(
  client: Queryable,
  pipeline: string,
  seqBefore: number,
): Promise<{ firstSeq: number | null; lastSeq: number | null }> {
  const row = (await client.query(prepared(READ_LANDED_RANGE, READ_LANDED_RANGE_SQL, [pipeline, seqBefore]))).rows[0];
  return { firstSeq: row.first_seq as number | null, lastSeq: row.last_seq as number | null };
}
