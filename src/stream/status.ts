/**
 * What a pipeline's state is: ledger, checkpoint, last progress, windows.
 * Shared by the CLI's `status`/`replay` summary and the REST API.
 */
import type { Pool } from "../db/pool.js";

export interface PipelineStatus {
  pipeline: string;
  ledger: { landed: number; accepted: number; quarantined: number; quarantinedByReason: Record<string, number> };
  checkpoint: { batchId: number; lastOffset: number; maxEventTime: string | null; watermark: string | null } | null;
  /** Rows in bronze past the checkpoint: what the stream still has to read. */
  backlogRows: number;
  numRowsDroppedByWatermark: number;
  /** Windows recorded in `straggler.failed_windows` (an aggregate failed; their rows were quarantined). */
  failedWindows: number;
  windows: { open: number; final: number; corrected: number; awaitingCorrection: number };
  lastProgress: Record<string, unknown> | null;
  /** Sources (files, requests, replay micro-batches) by state: landed, refused, changed_after_landing, waiting_to_settle. */
  sources: SourceCounts;
}

export interface SourceCounts {
  landed: number;
  refused: number;
  changed_after_landing: number;
  waiting_to_settle: number;
}

/** Sources of `pipeline` by state (view `straggler.sources`), every state present (0 when none). */
export async function sourceCounts(pool: Pool, pipeline: string): Promise<SourceCounts> {
  const { rows } = await pool.query("SELECT state, count(*)::int AS n FROM straggler.sources WHERE pipeline = $1 GROUP BY state", [pipeline]);
  const by = Object.fromEntries(rows.map((r) => [r.state, r.n]));
  return { landed: by.landed ?? 0, refused: by.refused ?? 0, changed_after_landing: by.changed_after_landing ?? 0, waiting_to_settle: by.waiting_to_settle ?? 0 };
}

/** Reads the status of `pipeline` (all counts are rows; instants ISO 8601 UTC). */
export async function pipelineStatus(pool: Pool, pipeline: string): Promise<PipelineStatus> {
  const [ledger, reasons, cp, dropped, win, awaiting, last, sources, failed] = await Promise.all([
    pool.query("SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = $1", [pipeline]),
    pool.query("SELECT reason, count(*)::int AS n FROM straggler.quarantine WHERE pipeline = $1 GROUP BY reason ORDER BY reason", [pipeline]),
    pool.query("SELECT batch_id, last_offset, max_event_time, watermark FROM straggler.checkpoints WHERE pipeline = $1", [pipeline]),
    pool.query("SELECT coalesce(sum(num_rows_dropped_by_watermark), 0)::bigint AS n FROM straggler.batch_progress WHERE pipeline = $1", [pipeline]),
    pool.query("SELECT status, count(*)::int AS n FROM straggler.window_results WHERE pipeline = $1 GROUP BY status", [pipeline]),
    pool.query("SELECT count(*)::int AS n FROM straggler.late_windows WHERE pipeline = $1", [pipeline]),
    pool.query("SELECT * FROM straggler.stream_progress WHERE pipeline = $1 ORDER BY batch_id DESC LIMIT 1", [pipeline]),
    sourceCounts(pool, pipeline),
    pool.query("SELECT count(*)::int AS n FROM straggler.window_failures WHERE pipeline = $1", [pipeline]),
  ]);
  const c = cp.rows[0];
  const backlog = await pool.query("SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2", [pipeline, c?.last_offset ?? 0]);
  const byStatus = Object.fromEntries(win.rows.map((r) => [r.status, r.n]));
  return {
    pipeline,
    ledger: {
      ...(ledger.rows[0] ?? { landed: 0, accepted: 0, quarantined: 0 }),
      quarantinedByReason: Object.fromEntries(reasons.rows.map((r) => [r.reason, r.n])),
    },
    checkpoint: c ? { batchId: c.batch_id, lastOffset: c.last_offset, maxEventTime: c.max_event_time, watermark: c.watermark } : null,
    backlogRows: backlog.rows[0].n,
    numRowsDroppedByWatermark: dropped.rows[0].n,
    failedWindows: failed.rows[0].n,
    windows: { open: byStatus.open ?? 0, final: byStatus.final ?? 0, corrected: byStatus.corrected ?? 0, awaitingCorrection: awaiting.rows[0].n },
    lastProgress: last.rows[0] ?? null,
    sources,
  };
}
