/**
 * The what-if's input (issue 14): a pipeline's accepted bronze rows (less
 * those a later version superseded: fragments/superseded.ts) in `seq` order, one keyset page at a time (the (pipeline, seq) index), so a ledger
 * of any size streams through without being held in memory.
 */
import type { Queryable } from "../../pool.js";
import { timestamptzToUs } from "../fragments/windowAssignment.js";
import { ingestionTimeOf } from "../fragments/ingestionTime.js";
import { notSuperseded } from "../fragments/superseded.js";

/** One accepted row; instants as exact epoch-µs `bigint`. */
export interface LatenessRow {
  seq: number;
  eventUs: bigint;
  ingestionUs: bigint;
  groupKey: string;
}

const READ_LATENESS_ROWS_NAME = "lateness_rows";
/** Epoch µs as text: node-postgres would read a bigint as a (rounded) number. */
const READ_LATENESS_ROWS_SQL = `SELECT seq,
       ${timestamptzToUs("event_time")}::text AS event_us,
       ${timestamptzToUs(ingestionTimeOf("bronze_events"))}::text AS ingestion_us,
       group_key
  FROM straggler.bronze_events
 WHERE pipeline = $1 AND seq > $2 AND seq <= $3 AND status = 'accepted' AND ${notSuperseded("bronze_events")}
 ORDER BY seq
 LIMIT $4`;

/**
 * Accepted rows of `pipeline` with `afterSeq < seq <= lastSeq`, at most `limit`, in `seq` order.
 * @throws database errors
 */
export async function readLatenessRows(
  client: Queryable,
  pipeline: string,
  afterSeq: number,
  lastSeq: number,
  limit: number,
): Promise<LatenessRow[]> {
  const { rows } = await client.query<{ seq: number; event_us: string; ingestion_us: string; group_key: string }>({
    name: READ_LATENESS_ROWS_NAME,
    text: READ_LATENESS_ROWS_SQL,
    values: [pipeline, afterSeq, lastSeq, limit],
  });
  return rows.map((r) => ({
    seq: r.seq,
    eventUs: BigInt(r.event_us),
    ingestionUs: BigInt(r.ingestion_us),
    groupKey: r.group_key,
  }));
}
