/**
 * The correction audit of one key's window, or of every session of the key overlapping a span
 * (`straggler.corrections` with its run from `straggler.correction_runs`), by run. Instants are
 * ISO 8601 UTC strings, values numeric strings.
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

/** Aggregates as the audit stores them; `count` 0 with nulls for a window the run removed. */
interface AuditAggregates {
  count: number;
  sum: string | null;
  min: string | null;
  max: string | null;
}

/** One audit row: a window a correction run changed. */
export interface WindowAuditRow {
  runId: number;
  trigger: string;
  cronSlot: string | null;
  startedAt: string;
  bronzeSnapshot: number | null;
  windowStart: string;
  windowEnd: string;
  revisionBefore: number | null;
  revisionAfter: number;
  /** Null when the run created the window. */
  before: AuditAggregates | null;
  after: AuditAggregates;
  lateEventIds: string[];
  correctedAt: string;
  reconcileRunId: number | null;
}

const AUDIT_SQL = `SELECT c.run_id, r.trigger, r.cron_slot, r.started_at, r.bronze_snapshot, c.window_start, c.window_end,
       c.revision_before, c.revision_after, c.count_before, c.sum_before, c.min_before, c.max_before,
       c.count_after, c.sum_after, c.min_after, c.max_after, c.late_event_ids, c.corrected_at, c.reconcile_run_id
  FROM straggler.corrections c JOIN straggler.correction_runs r ON r.run_id = c.run_id
 WHERE c.pipeline = $1 AND c.group_key = $2 AND r.status = 'succeeded'
   AND CASE WHEN $5 THEN c.window_start = $3 AND c.window_end = $4 ELSE c.window_start < $4 AND c.window_end > $3 END
 ORDER BY c.run_id, c.window_start, c.window_end`;

/**
 * @param exact true: the window `[start, end)` itself; false: every window of the key overlapping it (sessions)
 * @throws the database's error when it cannot be reached
 */
export async function readWindowAudit(
  client: Queryable,
  pipeline: string,
  groupKey: string,
  start: string,
  end: string,
  exact: boolean,
): Promise<WindowAuditRow[]> {
  const { rows } = await client.query(
    prepared("explain_window_audit", AUDIT_SQL, [pipeline, groupKey, start, end, exact]),
  );
  return rows.map((r) => ({
    runId: Number(r.run_id),
    trigger: r.trigger as string,
    cronSlot: r.cron_slot as string | null,
    startedAt: r.started_at as string,
    bronzeSnapshot: r.bronze_snapshot === null ? null : Number(r.bronze_snapshot),
    windowStart: r.window_start as string,
    windowEnd: r.window_end as string,
    revisionBefore: r.revision_before as number | null,
    revisionAfter: r.revision_after as number,
    before:
      r.count_before === null
        ? null
        : { count: Number(r.count_before), sum: r.sum_before, min: r.min_before, max: r.max_before },
    after: { count: Number(r.count_after), sum: r.sum_after, min: r.min_after, max: r.max_after },
    lateEventIds: r.late_event_ids as string[],
    correctedAt: r.corrected_at as string,
    reconcileRunId: r.reconcile_run_id === null ? null : Number(r.reconcile_run_id),
  }));
}
