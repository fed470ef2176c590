/**
 * Reads the counts behind a pipeline's status (src/stream/status.ts) from the
 * read model's views and tables, each statement on its own connection of
 * `pool` (they run at once; the counts are not one snapshot).
 */
import type { Pool } from "../../pool.js";

/** All counts are rows. */
export interface StatusCounts {
  ledger: { landed: number; accepted: number; quarantined: number };
  quarantinedByReason: Record<string, number>;
  /** Bronze rows after `afterSeq`. */
  backlogRows: number;
  numRowsDroppedByWatermark: number;
  failedWindows: number;
  /** Windows per status of the view `straggler.window_results` (open, final, corrected). */
  windowsByStatus: Record<string, number>;
  /** Late (key, window)s awaiting correction. */
  awaitingCorrection: number;
  /** The last row of the view `straggler.stream_progress`, as the view names its columns; null before the first batch. */
  lastProgress: Record<string, unknown> | null;
}

const LEDGER_SQL = "SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = $1";
// With the quarantined rows of archived partitions (straggler.archived_rows): counts survive archival, as the ledger's do.
const REASONS_SQL = `SELECT reason, sum(n)::int AS n
  FROM (SELECT reason, count(*) AS n FROM straggler.quarantine WHERE pipeline = $1 GROUP BY reason
        UNION ALL SELECT reason, rows FROM straggler.archived_rows WHERE pipeline = $1 AND status = 'quarantined') t
 GROUP BY reason ORDER BY reason`;
const BACKLOG_SQL = "SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2";
const DROPPED_SQL = "SELECT coalesce(sum(num_rows_dropped_by_watermark), 0)::bigint AS n FROM straggler.batch_progress WHERE pipeline = $1";
const WINDOWS_SQL = "SELECT status, count(*)::int AS n FROM straggler.window_results WHERE pipeline = $1 GROUP BY status";
const AWAITING_SQL = "SELECT count(*)::int AS n FROM straggler.late_windows WHERE pipeline = $1";
const LAST_PROGRESS_SQL = "SELECT * FROM straggler.stream_progress WHERE pipeline = $1 ORDER BY batch_id DESC LIMIT 1";
const FAILED_SQL = "SELECT count(*)::int AS n FROM straggler.window_failures WHERE pipeline = $1";

const byName = (rows: Array<{ n: number }>, name: string): Record<string, number> => Object.fromEntries(rows.map((r) => [(r as Record<string, unknown>)[name], r.n]));

/** @param afterSeq the checkpoint's last `seq` (0 before the first batch): the backlog is counted after it */
export async function readStatusCounts(pool: Pool, pipeline: string, afterSeq: number): Promise<StatusCounts> {
  const [ledger, reasons, backlog, dropped, windows, awaiting, last, failed] = await Promise.all([
    pool.query(LEDGER_SQL, [pipeline]),
    pool.query(REASONS_SQL, [pipeline]),
    pool.query(BACKLOG_SQL, [pipeline, afterSeq]),
    pool.query(DROPPED_SQL, [pipeline]),
    pool.query(WINDOWS_SQL, [pipeline]),
    pool.query(AWAITING_SQL, [pipeline]),
    pool.query(LAST_PROGRESS_SQL, [pipeline]),
    pool.query(FAILED_SQL, [pipeline]),
  ]);
  return {
    ledger: ledger.rows[0] ?? { landed: 0, accepted: 0, quarantined: 0 },
    quarantinedByReason: byName(reasons.rows, "reason"),
    backlogRows: backlog.rows[0].n,
    numRowsDroppedByWatermark: dropped.rows[0].n,
    failedWindows: failed.rows[0].n,
    windowsByStatus: byName(windows.rows, "status"),
    awaitingCorrection: awaiting.rows[0].n,
    lastProgress: last.rows[0] ?? null,
  };
}
