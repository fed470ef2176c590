/**
 * Assigns the batch's accepted rows (less those superseded by a row up to
 * the batch's end: src/db/sql/fragments/superseded.ts) to their windows and splits the
 * (event, window) pairs by Spark's late rule (DESIGN §3–4): a pair is late
 * when its window ends at or before the watermark of earlier batches.
 */
import type { WindowSpec } from "../../core/windows.js";
import type { PoolClient } from "../pool.js";
import { prepared } from "../prepared.js";
import { BATCH_PAIRS, CREATE_BATCH_PAIRS_SQL } from "./fragments/batchPairs.js";
import { windowEndUs, windowsLateralUs } from "./fragments/windowAssignment.js";
import type { BatchRange } from "./selectBatchRange.js";
import { notSuperseded } from "./fragments/superseded.js";

const ASSIGN_BATCH_WINDOWS = "batch_pairs";
const assignSql = (spec: WindowSpec) => `INSERT INTO ${BATCH_PAIRS}
       SELECT b.seq, b.group_key, b.value, w.ws_us, ${windowEndUs(spec)},
              ($4::bigint IS NOT NULL AND ${windowEndUs(spec)} <= $4::bigint) AS late
         FROM straggler.bronze_events b ${windowsLateralUs(spec, "b")}
        WHERE b.pipeline = $1 AND b.seq > $2 AND b.seq <= $3 AND b.status = 'accepted' AND ${notSuperseded("b", "$3")}`;

/**
 * Fills the session's pairs table (`BATCH_PAIRS`) with the pairs of `range`.
 * @param watermarkUs the watermark of earlier batches, epoch µs; null before the first (no pair is late)
 */
export async function assignBatchWindows(client: PoolClient, pipeline: string, spec: WindowSpec, range: BatchRange, watermarkUs: bigint | null): Promise<void> {
  await client.query(CREATE_BATCH_PAIRS_SQL);
  await client.query(prepared(ASSIGN_BATCH_WINDOWS, assignSql(spec), [pipeline, range.afterSeq, range.lastSeq, watermarkUs?.toString() ?? null]));
}
