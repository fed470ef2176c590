/** What the alerts of one pipeline are judged on (src/observe/alerts.ts), read in one statement. */
import type { Queryable } from "../../pool.js";

/** Counts are rows (pairs for dropped); `stalledSeconds` is 0 unless rows landed since the watermark last moved. */
export interface AlertFacts {
  /** Over the last `dropBatches` batches: input rows and (event, window) pairs dropped by the watermark. */
  dropInputRows: number;
  droppedPairs: number;
  /** Over the bronze rows read by the last `quarantineBatches` batches: all of them, and those quarantined (for `reason` only when given). */
  quarantineRows: number;
  quarantinedRows: number;
  /** Seconds since the watermark last moved (or since the first landing when it never has), when rows landed after that; else 0. */
  stalledSeconds: number;
  backlogRows: number;
  /** The latest finished correction run (`succeeded`, `failed` or `abandoned`), if any. */
  lastRun: { runId: number; status: string } | null;
}

const TEXT = `
WITH drop_batches AS (
  SELECT num_input_rows, num_rows_dropped_by_watermark FROM straggler.batch_progress
   WHERE pipeline = $1 ORDER BY batch_id DESC LIMIT $2
), q_range AS (
  SELECT min(start_offset) AS after_seq, max(end_offset) AS last_seq
    FROM (SELECT start_offset, end_offset FROM straggler.batch_progress WHERE pipeline = $1 ORDER BY batch_id DESC LIMIT $3) b
), moved AS (
  SELECT coalesce(
           (SELECT max(timestamp) FROM straggler.batch_progress WHERE pipeline = $1 AND next_watermark IS DISTINCT FROM watermark),
           (SELECT min(landed_at) FROM straggler.bronze_events WHERE pipeline = $1)) AS at
)
SELECT (SELECT coalesce(sum(num_input_rows), 0) FROM drop_batches)::bigint AS drop_input_rows,
       (SELECT coalesce(sum(num_rows_dropped_by_watermark), 0) FROM drop_batches)::bigint AS dropped_pairs,
       (SELECT count(*) FROM straggler.bronze_events e, q_range r
         WHERE e.pipeline = $1 AND e.seq > r.after_seq AND e.seq <= r.last_seq)::bigint AS quarantine_rows,
       (SELECT count(*) FROM straggler.bronze_events e, q_range r
         WHERE e.pipeline = $1 AND e.seq > r.after_seq AND e.seq <= r.last_seq
           AND e.status = 'quarantined' AND ($4::text IS NULL OR e.reason = $4))::bigint AS quarantined_rows,
       CASE WHEN EXISTS (SELECT 1 FROM straggler.bronze_events e, moved m WHERE e.pipeline = $1 AND e.landed_at > m.at)
            THEN (SELECT extract(epoch FROM now() - m.at) FROM moved m) ELSE 0 END::float8 AS stalled_seconds,
       (SELECT count(*) FROM straggler.bronze_events e
         WHERE e.pipeline = $1 AND e.seq > coalesce((SELECT last_offset FROM straggler.checkpoints WHERE pipeline = $1), 0))::bigint AS backlog_rows,
       (SELECT json_build_object('runId', run_id, 'status', status) FROM straggler.correction_history
         WHERE pipeline = $1 AND status IN ('succeeded', 'failed', 'abandoned') ORDER BY run_id DESC LIMIT 1) AS last_run`;

/**
 * Reads the facts of `pipeline`.
 * @param dropBatches how many of the latest batches the drop share covers
 * @param quarantineBatches how many of the latest batches the quarantine share covers
 * @param reason the quarantine reason to count (all reasons when undefined)
 */
export async function readAlertFacts(
  client: Queryable,
  pipeline: string,
  dropBatches: number,
  quarantineBatches: number,
  reason?: string,
): Promise<AlertFacts> {
  const { rows } = await client.query({
    name: "read_alert_facts",
    text: TEXT,
    values: [pipeline, dropBatches, quarantineBatches, reason ?? null],
  });
  const r = rows[0];
  return {
    dropInputRows: r.drop_input_rows,
    droppedPairs: r.dropped_pairs,
    quarantineRows: r.quarantine_rows,
    quarantinedRows: r.quarantined_rows,
    stalledSeconds: r.stalled_seconds,
    backlogRows: r.backlog_rows,
    lastRun: r.last_run,
  };
}
