/**
 * One micro-batch of one pipeline (DESIGN §2–6), in one transaction:
 *
 *   lock results → read checkpoint → pick the next bronze sequence range
 *   → assign windows → split (event, window) pairs by Spark's late rule
 *     (window end <= watermark of earlier batches)
 *   → late pairs: record for correction; on-time pairs: combine per key and
 *     MERGE into the results (update mode)
 *   → advance the watermark → finalize windows whose end <= new watermark
 *   → write checkpoint and progress → commit.
 *
 * Because writes, checkpoint and progress commit together, a crash at any
 * point replays the batch exactly once.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { windowSpecOf } from "../config/pipelines.js";
import { advanceWatermark } from "../core/watermark.js";
import { LockNamespace, XACT_LOCK_SQL } from "../db/locks.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import { prepared } from "../db/prepared.js";
import { formatInstant, isoToUs } from "../core/timestamps.js";
import { aggregateWindow, combineAggregates, computedAggregates, storedAggregates } from "../db/sql/fragments/windowAggregates.js";
import { usToTimestamptz, windowSizeUs, windowsLateralUs } from "../db/sql/fragments/windowAssignment.js";
import { FailingWindowsError, mergeGuarded, quarantineFailingWindows } from "./isolateWindows.js";

export type TriggerKind = "interval" | "once" | "available-now" | "replay" | "notify";

/** Progress of one batch, with Spark's StreamingQueryProgress names. Instants are ISO 8601 UTC strings. */
export interface BatchProgress {
  pipeline: string;
  batchId: number;
  trigger: TriggerKind;
  timestamp: string;
  startOffset: number;
  endOffset: number;
  /** Accepted rows in the batch's bronze range (quarantined rows are not stream input). */
  numInputRows: number;
  numQuarantinedRows: number;
  inputRowsPerSecond: number | null;
  processedRowsPerSecond: number | null;
  durationMs: number;
  eventTime: { min: string | null; max: string | null; avg: string | null; watermark: string | null };
  /** Watermark after this batch: what the next batch will use, and what finalized windows. */
  nextWatermark: string | null;
  /** Dropped (event, window) pairs — exact, unlike Spark's count of late groups. */
  numRowsDroppedByWatermark: number;
  numLateWindows: number;
  /** Windows MERGEd by this batch. */
  numRowsUpdated: number;
  numRowsFinalized: number;
  /** Open (not final) windows after the batch: Spark's state rows. */
  numRowsTotal: number;
}

interface Checkpoint {
  batch_id: number;
  last_offset: number;
  max_event_time: string | null;
  watermark: string | null;
}

/** Instants travel as ISO strings (µs kept) and are compared as epoch µs. */
const us = (iso: string | null): bigint | null => (iso === null ? null : isoToUs(iso));
const iso = (u: bigint | null): string | null => (u === null ? null : formatInstant(u));

async function readCheckpoint(c: PoolClient, pipeline: string): Promise<Checkpoint> {
  await c.query("INSERT INTO straggler.checkpoints (pipeline) VALUES ($1) ON CONFLICT DO NOTHING", [pipeline]);
  const { rows } = await c.query("SELECT batch_id, last_offset, max_event_time, watermark FROM straggler.checkpoints WHERE pipeline = $1 FOR UPDATE", [pipeline]);
  return rows[0] as Checkpoint;
}

/**
 * Runs the next micro-batch of `p`, if bronze has rows past the checkpoint.
 * A window whose MERGE fails with a data exception (SQLSTATE class 22) does
 * not stop the pipeline: its rows in the batch are quarantined
 * (`INVALID_VALUE`), the window is recorded in `straggler.failed_windows`, and
 * the batch runs without them (`src/stream/isolateWindows.ts`).
 * @returns the batch's progress, or null when there was nothing to do (an empty batch changes nothing)
 * @throws database errors; the transaction is rolled back and the batch will run again
 */
export async function runBatch(pool: Pool, p: PipelineConfig, trigger: TriggerKind): Promise<BatchProgress | null> {
  for (;;) {
    try {
      return await runBatchOnce(pool, p, trigger);
    } catch (e) {
      // A window whose MERGE fails (e.g. a sum overflowing numeric): quarantine its rows, record it, run the batch again.
      if (!(e instanceof FailingWindowsError)) throw e;
      // Every round quarantines rows (or finds the batch taken): it cannot loop without progress.
      if ((await quarantineFailingWindows(pool, p, e)) === 0) throw e;
    }
  }
}

async function runBatchOnce(pool: Pool, p: PipelineConfig, trigger: TriggerKind): Promise<BatchProgress | null> {
  const started = performance.now();
  return withTransaction(pool, async (client) => {
    await client.query(XACT_LOCK_SQL, [LockNamespace.results, p.name]);
    const cp = await readCheckpoint(client, p.name);
    const range = await client.query(prepared("range", `SELECT max(seq) AS end_offset FROM (SELECT seq FROM straggler.bronze_events
        WHERE pipeline = $1 AND seq > $2 ORDER BY seq LIMIT $3) s`,
      [p.name, cp.last_offset, p.trigger.maxRowsPerBatch]));
    const endOffset = range.rows[0].end_offset as number | null;
    if (endOffset === null) return null;
    const batchId = cp.batch_id + 1;
    const spec = windowSpecOf(p);
    const size = windowSizeUs(spec);
    const winStart = usToTimestamptz("ws_us"), winEnd = usToTimestamptz(`ws_us + ${size}`);
    const watermark = cp.watermark; // from earlier batches only (DESIGN §3)
    const params = [p.name, cp.last_offset, endOffset];
    const stats = (
      await client.query(prepared("stats", `SELECT count(*) FILTER (WHERE status = 'accepted')::int AS accepted,
                count(*) FILTER (WHERE status <> 'accepted')::int AS quarantined,
                min(event_time) FILTER (WHERE status = 'accepted') AS min_et,
                max(event_time) FILTER (WHERE status = 'accepted') AS max_et,
                timestamptz 'epoch' + avg(extract(epoch from event_time)) FILTER (WHERE status = 'accepted') * interval '1 second' AS avg_et
           FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2 AND seq <= $3`,
        params))
    ).rows[0] as { accepted: number; quarantined: number; min_et: string | null; max_et: string | null; avg_et: string | null };

    // (event, window) pairs as bigint window starts (epoch µs); kept per session and
    // emptied at every commit (no catalog writes per batch).
    await client.query(
      `CREATE TEMP TABLE IF NOT EXISTS batch_pairs_us (seq bigint, group_key text, value numeric,
         ws_us bigint, late boolean) ON COMMIT DELETE ROWS`,
    );
    await client.query(prepared("batch_pairs", `INSERT INTO batch_pairs_us
       SELECT b.seq, b.group_key, b.value, w.ws_us,
              ($4::bigint IS NOT NULL AND w.ws_us + ${size} <= $4::bigint) AS late
         FROM straggler.bronze_events b ${windowsLateralUs(spec, "b")}
        WHERE b.pipeline = $1 AND b.seq > $2 AND b.seq <= $3 AND b.status = 'accepted'`,
      [...params, us(watermark)?.toString() ?? null]));
    const late = (
      await client.query(prepared("late", `WITH ev AS (
           INSERT INTO straggler.late_events (pipeline, seq, group_key, window_start, window_end, batch_id)
           SELECT $1, seq, group_key, ${winStart}, ${winEnd}, $2 FROM batch_pairs_us WHERE late
           ON CONFLICT DO NOTHING RETURNING 1
         ), win AS (
           INSERT INTO straggler.late_windows AS l (pipeline, group_key, window_start, window_end, dropped_rows, max_seq, first_batch_id, last_batch_id)
           SELECT $1, group_key, ${winStart}, ${winEnd}, count(*), max(seq), $2, $2
             FROM batch_pairs_us WHERE late GROUP BY group_key, ws_us
           ON CONFLICT (pipeline, group_key, window_start, window_end) DO UPDATE
             SET dropped_rows = l.dropped_rows + excluded.dropped_rows,
                 max_seq = greatest(l.max_seq, excluded.max_seq),
                 last_batch_id = excluded.last_batch_id
           RETURNING 1
         )
         SELECT (SELECT count(*) FROM ev)::int AS pairs, (SELECT count(*) FROM win)::int AS windows`,
        [p.name, batchId]))
    ).rows[0] as { pairs: number; windows: number };

    // Rows for one key are combined first: a MERGE source may not hold two rows for one target row.
    const pairs = { table: "batch_pairs_us", window: "ws_us", windowStart: winStart, windowEnd: winEnd };
    const merged = await mergeGuarded(client, pairs, { lastOffset: cp.last_offset, batchId }, () => client.query(prepared("merge", `MERGE INTO straggler.window_results_table AS t
       USING (SELECT group_key, ${winStart} AS window_start, ${winEnd} AS window_end,
                     ${aggregateWindow()}
                FROM batch_pairs_us WHERE NOT late GROUP BY group_key, ws_us) AS s
          ON t.pipeline = $1 AND t.group_key = s.group_key AND t.window_start = s.window_start AND t.window_end = s.window_end
       WHEN MATCHED AND NOT t.is_final THEN
         UPDATE SET ${combineAggregates("t", "s")},
                    last_batch_id = $2, updated_at = now()
       WHEN NOT MATCHED THEN
         INSERT (pipeline, group_key, window_start, window_end, ${storedAggregates()}, last_batch_id)
         VALUES ($1, s.group_key, s.window_start, s.window_end, ${computedAggregates("s")}, $2)`,
      [p.name, batchId])));

    const maxEvent = [us(cp.max_event_time), us(stats.max_et)].reduce<bigint | null>((a, b) => (b === null ? a : a === null || b > a ? b : a), null);
    const nextWatermark = iso(advanceWatermark(us(watermark), maxEvent, p.watermark.delay));
    const finalized = await client.query(prepared("finalize", `UPDATE straggler.window_results_table SET is_final = true, updated_at = now()
        WHERE pipeline = $1 AND NOT is_final AND window_end <= $2`,
      [p.name, nextWatermark]));
    const open = (await client.query("SELECT count(*)::int AS n FROM straggler.window_results_table WHERE pipeline = $1 AND NOT is_final", [p.name])).rows[0].n as number;
    const previous = ((await client.query("SELECT timestamp AS t FROM straggler.batch_progress WHERE pipeline = $1 ORDER BY batch_id DESC LIMIT 1", [p.name])).rows[0]?.t ?? null) as string | null;

    const durationMs = Math.max(1, Math.round(performance.now() - started));
    const now = Date.now();
    const sincePrevious = previous === null ? null : (now - Date.parse(previous)) / 1000;
    const progress: BatchProgress = {
      pipeline: p.name,
      batchId,
      trigger,
      timestamp: new Date(now).toISOString(),
      startOffset: cp.last_offset,
      endOffset,
      numInputRows: stats.accepted,
      numQuarantinedRows: stats.quarantined,
      inputRowsPerSecond: sincePrevious && sincePrevious > 0 ? stats.accepted / sincePrevious : null,
      processedRowsPerSecond: (stats.accepted * 1000) / durationMs,
      durationMs,
      eventTime: { min: stats.min_et, max: stats.max_et, avg: stats.avg_et, watermark },
      nextWatermark,
      numRowsDroppedByWatermark: late.pairs,
      numLateWindows: late.windows,
      numRowsUpdated: merged.rowCount ?? 0,
      numRowsFinalized: finalized.rowCount ?? 0,
      numRowsTotal: open,
    };
    await client.query(
      `UPDATE straggler.checkpoints SET batch_id = $2, last_offset = $3, max_event_time = $4, watermark = $5, updated_at = now() WHERE pipeline = $1`,
      [p.name, batchId, endOffset, iso(maxEvent), nextWatermark],
    );
    await client.query(
      `INSERT INTO straggler.batch_progress (pipeline, batch_id, trigger, start_offset, end_offset, num_input_rows, num_quarantined_rows,
         input_rows_per_second, processed_rows_per_second, duration_ms, event_time_min, event_time_max, event_time_avg, watermark, next_watermark,
         num_rows_dropped_by_watermark, num_late_windows, num_rows_updated, num_rows_finalized, num_rows_total, timestamp)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21)`,
      [
        p.name, batchId, trigger, cp.last_offset, endOffset, stats.accepted, stats.quarantined,
        progress.inputRowsPerSecond, progress.processedRowsPerSecond, durationMs, stats.min_et, stats.max_et, stats.avg_et, watermark, nextWatermark,
        late.pairs, late.windows, progress.numRowsUpdated, progress.numRowsFinalized, open, progress.timestamp,
      ],
    );
    return progress;
  });
}
