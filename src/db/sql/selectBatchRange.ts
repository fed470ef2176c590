/** Picks the bronze rows of a pipeline's next micro-batch (DESIGN §2): Spark's offset range of a batch. */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

/** The bronze rows of one batch: `afterSeq < seq <= lastSeq`. */
export interface BatchRange {
  /** The checkpoint's `lastSeq`: the batch starts after it. */
  afterSeq: number;
  /** The batch's last bronze `seq`. */
  lastSeq: number;
}

const SELECT_BATCH_RANGE = "range";
const SELECT_BATCH_RANGE_SQL = `SELECT max(seq) AS last_seq FROM (SELECT seq FROM straggler.bronze_events
        WHERE pipeline = $1 AND seq > $2 AND seq <= $4 ORDER BY seq LIMIT $3) s`;

/**
 * The next batch of `pipeline`: at most `maxRows` bronze rows (accepted or
 * quarantined) after `afterSeq`, in `seq` order, none past `untilSeq` when given.
 * @returns the range, or null when bronze holds nothing after `afterSeq` (up to `untilSeq`)
 */
export async function selectBatchRange(client: Queryable, pipeline: string, afterSeq: number, maxRows: number, untilSeq?: number): Promise<BatchRange | null> {
  const { rows } = await client.query(prepared(SELECT_BATCH_RANGE, SELECT_BATCH_RANGE_SQL, [pipeline, afterSeq, maxRows, untilSeq ?? Number.MAX_SAFE_INTEGER]));
  const lastSeq = rows[0].last_seq as number | null;
  return lastSeq === null ? null : { afterSeq, lastSeq };
}
