/**
 * Reads the counts behind a pipeline's status (src/stream/status.ts) from the
 * read model's views and tables, each statement on its own connection of
 * `pool` (they run at once; the counts are not one snapshot). The ledger's
 * counts are the kept ones (`straggler.ledger_counts`, archived rows included):
 * bronze is counted only past the checkpoint (the backlog).
 */
import type { Pool } from "../../pool.js";
import { readLedgerCounts } from "./ledgerCounts.js";

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

const BACKLOG_SQL = "SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2";
const DROPPED_SQL =
  "SELECT coalesce(sum(num_rows_dropped_by_watermark), 0)::bigint AS n FROM straggler.batch_progress WHERE pipeline = $1";
const WINDOWS_SQL =
  "SELECT status, count(*)::int AS n FROM straggler.window_results WHERE pipeline = $1 GROUP BY status";
const AWAITING_SQL = "SELECT count(*)::int AS n FROM straggler.late_windows WHERE pipeline = $1";
const LAST_PROGRESS_SQL = "SELECT * FROM straggler.stream_progress WHERE pipeline = $1 ORDER BY batch_id DESC LIMIT 1";
const FAILED_SQL = "SELECT count(*)::int AS n FROM straggler.window_failures WHERE pipeline = $1";

const byName = (rows: Array<{ n: number }>, name: string): Record<string, number> =>
  Object.fromEntries(rows.map((r) => [(r as Record<string, unknown>)[name], r.n]));

/** @param afterSeq the checkpoint's last `seq` (0 before the first batch): the backlog is counted after it */
export async function readStatusCounts(pool: Pool, pipeline: string, afterSeq: number): Promise<StatusCounts> {
  const [ledger, backlog, dropped, windows, awaiting, last, failed] = await Promise.all([
    readLedgerCounts(pool, [pipeline]),
    pool.query(BACKLOG_SQL, [pipeline, afterSeq]),
    pool.query(DROPPED_SQL, [pipeline]),
    pool.query(WINDOWS_SQL, [pipeline]),
    pool.query(AWAITING_SQL, [pipeline]),
    pool.query(LAST_PROGRESS_SQL, [pipeline]),
    pool.query(FAILED_SQL, [pipeline]),
  ]);
  const counts = ledger.get(pipeline)!;
  return {
    ledger: { landed: counts.landed, accepted: counts.accepted, quarantined: counts.quarantined },
    quarantinedByReason: counts.quarantinedByReason,
    backlogRows: backlog.rows[0].n,
    numRowsDroppedByWatermark: dropped.rows[0].n,
    failedWindows: failed.rows[0].n,
    windowsByStatus: byName(windows.rows, "status"),
    awaitingCorrection: awaiting.rows[0].n,
    lastProgress: last.rows[0] ?? null,
  };
}
