/**
 * Records the batch's late (event, window) pairs for the correction (DESIGN
 * §4, §9): each pair in `straggler.late_events` (with its event id, which the correction's audit names), each (key, window) in
 * `straggler.late_windows` with its dropped-row count, highest `seq` and the
 * batches that dropped rows into it.
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { BATCH_PAIRS, pairWindowBounds } from "../fragments/batchPairs.js";

/** Late pairs newly recorded, and late (key, window)s inserted or updated. */
export interface LatePairs {
  pairs: number;
  windows: number;
}

const REGISTER_LATE_PAIRS = "late";
function registerSql(): string {
  const { windowStart, windowEnd } = pairWindowBounds();
  return `WITH ev AS (
           INSERT INTO straggler.late_events (pipeline, seq, group_key, window_start, window_end, batch_id, event_id)
           SELECT $1, seq, group_key, ${windowStart}, ${windowEnd}, $2, event_id FROM ${BATCH_PAIRS} WHERE late
           ON CONFLICT DO NOTHING RETURNING 1
         ), win AS (
           INSERT INTO straggler.late_windows AS l (pipeline, group_key, window_start, window_end, dropped_rows, max_seq, first_batch_id, last_batch_id)
           SELECT $1, group_key, ${windowStart}, ${windowEnd}, count(*), max(seq), $2, $2
             FROM ${BATCH_PAIRS} WHERE late GROUP BY group_key, ws_us, we_us
           ON CONFLICT (pipeline, group_key, window_start, window_end) DO UPDATE
             SET dropped_rows = l.dropped_rows + excluded.dropped_rows,
                 max_seq = greatest(l.max_seq, excluded.max_seq),
                 last_batch_id = excluded.last_batch_id
           RETURNING 1
         )
         SELECT (SELECT count(*) FROM ev)::int AS pairs, (SELECT count(*) FROM win)::int AS windows`;
}

/** Records the late pairs of the session's pairs table as batch `batchId` of `pipeline`. A pair already recorded is not counted again. */
export async function registerLatePairs(client: PoolClient, pipeline: string, batchId: number): Promise<LatePairs> {
  return (await client.query(prepared(REGISTER_LATE_PAIRS, registerSql(), [pipeline, batchId]))).rows[0] as LatePairs;
}
