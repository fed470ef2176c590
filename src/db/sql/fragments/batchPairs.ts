/**
 * The batch's (event, window) pairs: a temporary table kept per session and
 * emptied at every commit (no catalog writes per batch), filled by
 * `readBatch` (src/db/sql/stream/readBatch.ts) and read by the late-pair, MERGE and isolation steps.
 * Windows are bigint starts and ends in epoch µs (`ws_us`, `we_us`; a start
 * names a window, the end is kept because a calendar window's length varies);
 * `late` is Spark's rule against the watermark of earlier batches. A row holds
 * its pairs' aggregates (`n` pairs, the sum `s`, min `lo` and max `hi` of their
 * values, as `aggregateWindow` computes them): one row per pair (`seq` and
 * `event_id` its event's, `n` 1) for a late pair, and for an on-time pair when the batch reads
 * them one by one (a guarded batch, a lateness histogram); otherwise one row
 * per on-time (key, window), `seq` and `event_id` NULL (readBatch's `aggregateOnTime`).
 */
import { usToTimestamptz } from "./windowAssignment.js";

export const BATCH_PAIRS = "batch_pairs_us";

/**
 * Creates the pairs table once per session, and ANALYZEs it while it is
 * empty. Never analysed, the planner takes it for 10 pages (~350 pairs)
 * whatever it holds, and MERGEs a batch of 14 windows by a hash join over
 * every results row of the pipeline (4.4 ms at 10k windows, growing with the
 * results) instead of 14 index probes (0.4 ms). Analysed once, it is
 * estimated from its actual size in pages at every statement: a handful of
 * pairs for a small batch, thousands for a large one. No statistics are
 * written per batch.
 */
export const CREATE_BATCH_PAIRS_SQL = `DO $$BEGIN
  IF to_regclass('pg_temp.${BATCH_PAIRS}') IS NULL THEN
    CREATE TEMP TABLE ${BATCH_PAIRS} (seq bigint, event_id text, group_key text, ws_us bigint, we_us bigint, late boolean, n bigint, s numeric, lo numeric, hi numeric) ON COMMIT DELETE ROWS;
    ANALYZE pg_temp.${BATCH_PAIRS};
  END IF;
END$$`;

/** SQL for a pair's window bounds as timestamptz, from its `ws_us` and `we_us` (group by both). */
export function pairWindowBounds(): { windowStart: string; windowEnd: string } {
  return { windowStart: usToTimestamptz("ws_us"), windowEnd: usToTimestamptz("we_us") };
}
