/**
 * A micro-batch's last statement, in its transaction (DESIGN §6): finalizes
 * the windows the new watermark has passed (their end is at or before it; the
 * stream no longer updates them), writes the new checkpoint, and writes the
 * batch's progress row (`straggler.batch_progress`) with the windows it
 * finalized and the pipeline's windows still open after it (Spark's state
 * rows, `numRowsTotal`). One round trip for the three.
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { BATCH_PAIRS } from "../fragments/batchPairs.js";
import { latenessHistogramCtes } from "../lateness/histogramUpdate.js";
import type { BatchProgress, Checkpoint } from "../../../core/model.js";
import { liveVersion } from "../fragments/liveVersion.js";

/** Windows finalized by a batch, and the pipeline's windows open after it. */
export interface Finalized {
  finalized: number;
  open: number;
}

// Every part of one statement reads the same snapshot: the open count does not see the
// UPDATE. The windows open after it are those open before it that end after the new
// watermark (the UPDATE finalizes every other one; the batch holds the results lock): counted
// so, the scan of the partial index starts at the watermark, and skips the entries of every
// window finalized before (dead row versions until a vacuum), which made the count grow with
// the pipeline's history. The UPDATE's scan starts at the batch's first watermark ($14) for the same reason:
// no window ending at or before it is open (the batch that moved the watermark there finalized every one; an
// on-time pair's window ends after it; a late pair opens no window; a correction writes final windows), so
// the windows to finalize end in ($14, $15]. Read from the index's start, the UPDATE walked every window
// finalized since the last vacuum: 9,084 entries for 7 windows late in the taxi replay, most of the
// statement's time. The checkpoint's row was locked by the batch's first read (src/db/sql/stream/openBatch.ts).
/**
 * The statement's text. `mergedFinal`: the batch's MERGE wrote final the windows it touched that end at
 * or before the new watermark (src/db/sql/stream/mergeWindows.ts): they count as finalized by this batch, one
 * per (key, window) of the batch's on-time pairs ending at or before $23 (the new watermark, epoch µs).
 * Exact because an on-time pair's window ends after the watermark of earlier batches, so it was open.
 */
function closeBatchSql(mergedFinal: boolean, pairs: "windows" | "lateness" | "none"): string {
  const merged = mergedFinal
    ? ` + (SELECT count(*) FROM (SELECT DISTINCT group_key, ws_us, we_us FROM ${BATCH_PAIRS} WHERE NOT late AND we_us <= $23::bigint) m)::int`
    : "";
  return `WITH ${pairs === "none" ? "" : latenessHistogramCtes(pairs)}
       fin AS (
         UPDATE straggler.window_results_table SET is_final = true, updated_at = now()
          WHERE pipeline = $1 AND version = ${liveVersion()} AND NOT is_final
            AND window_end > coalesce($14, '-infinity'::timestamptz) AND window_end <= $15
         RETURNING 1),
       counts AS (
         SELECT (SELECT count(*) FROM fin)::int${merged} AS finalized,
                (SELECT count(*) FROM straggler.window_results_table
                  WHERE pipeline = $1 AND version = ${liveVersion()} AND NOT is_final AND window_end > coalesce($15, '-infinity'::timestamptz))::int AS open),
       cp AS (
         UPDATE straggler.checkpoints SET batch_id = $2, last_offset = $5, max_event_time = $20, watermark = $15, inputs = $21, updated_at = now()
          WHERE pipeline = $1)
       INSERT INTO straggler.batch_progress (pipeline, batch_id, trigger, start_offset, end_offset, num_input_rows, num_quarantined_rows,
         input_rows_per_second, processed_rows_per_second, duration_ms, event_time_min, event_time_max, event_time_avg, watermark, next_watermark,
         num_rows_dropped_by_watermark, num_late_windows, num_rows_updated, timestamp, inputs, num_rows_finalized, num_rows_total)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$22,
               (SELECT finalized FROM counts), (SELECT open FROM counts))
       RETURNING num_rows_finalized AS finalized, num_rows_total AS open`;
}

/**
 * Finalizes windows up to `progress.nextWatermark` (null finalizes nothing), saves the
 * checkpoint (batch id, last `seq` and watermark from `progress`; `state`: the rest) and
 * inserts `progress`, whose `numRowsFinalized` and `numRowsTotal` are taken from the
 * finalization (the values given are not written).
 * @param state the checkpoint's max event time (ISO 8601) and inputs after the batch
 * @param mergedFinalUpToUs the new watermark (epoch µs) when the batch's MERGE wrote final the windows it touched up to it; they count as finalized (null: it wrote them open)
 * @param pairs `none` when the pipeline keeps no lateness histogram (`lateness.histogram` false); else
 *   `windows` when the batch filled the pairs table, `lateness` for session windows: what the batch
 *   adds to the lateness histogram in the same statement (src/db/sql/lateness/histogramUpdate.ts)
 * @returns windows finalized, and windows still open afterwards
 * @throws the database's error
 */
export async function closeBatch(
  client: Queryable,
  progress: BatchProgress,
  state: Pick<Checkpoint, "maxEventTime" | "inputs">,
  mergedFinalUpToUs: bigint | null = null,
  pairs: "windows" | "lateness" | "none" = "windows",
): Promise<Finalized> {
  const merged = mergedFinalUpToUs !== null;
  const suffix = pairs === "none" ? "" : pairs === "windows" ? "_lateness" : "_lateness_sessions";
  const name = `${merged ? "close_batch_merged_final" : "close_batch"}${suffix}`;
  const r = (
    await client.query(
      prepared(name, closeBatchSql(merged, pairs), [
        progress.pipeline,
        progress.batchId,
        progress.trigger,
        progress.startOffset,
        progress.endOffset,
        progress.numInputRows,
        progress.numQuarantinedRows,
        progress.inputRowsPerSecond,
        progress.processedRowsPerSecond,
        progress.durationMs,
        progress.eventTime.min,
        progress.eventTime.max,
        progress.eventTime.avg,
        progress.eventTime.watermark,
        progress.nextWatermark,
        progress.numRowsDroppedByWatermark,
        progress.numLateWindows,
        progress.numRowsUpdated,
        progress.timestamp,
        state.maxEventTime,
        JSON.stringify(state.inputs),
        JSON.stringify(progress.inputs),
        ...(merged ? [mergedFinalUpToUs.toString()] : []),
      ]),
    )
  ).rows[0];
  return { finalized: r.finalized, open: r.open };
}
