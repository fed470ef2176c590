/**
 * The archives of a pipeline not restored (`straggler.archived_rows`, migration 0023) as the horizon
 * guard reads them (src/guards/horizon.ts): which reach into a range of windows, and taking the
 * windows and spans they reach out of a correction run's targets. A window [start, end) could hold
 * archived rows when such an archive's min event time < end and its max event time >= start.
 */
import type { Queryable } from "../../pool.js";

/** One archive of a pipeline that reaches into a window range. */
export interface ArchivedSpan {
  partition: string;
  /** ISO 8601: the archive's least and greatest event time of the pipeline. */
  minEventTime: string;
  maxEventTime: string;
  file: string;
}

const OVERLAPPING_SQL = `SELECT a.partition, min(a.min_event_time) AS min_et, max(a.max_event_time) AS max_et, min(b.file) AS file
  FROM straggler.archived_rows a JOIN straggler.bronze_archives b ON b.partition = a.partition AND b.pipeline = a.pipeline
 WHERE a.pipeline = $1 AND a.min_event_time IS NOT NULL
 GROUP BY a.partition
HAVING ($2::timestamptz IS NULL OR min(a.min_event_time) < $3::timestamptz) AND ($2::timestamptz IS NULL OR max(a.max_event_time) >= $2::timestamptz)
 ORDER BY a.partition`;

/**
 * The archives of `pipeline` not restored whose event times reach into windows starting before `to` and
 * ending after `from` (ISO instants as `formatInstant` writes them), by partition name; both null: every one.
 */
export async function readArchivesReaching(
  db: Queryable,
  pipeline: string,
  from: string | null,
  to: string | null,
): Promise<ArchivedSpan[]> {
  const { rows } = await db.query(OVERLAPPING_SQL, [pipeline, from, to]);
  return rows.map((r) => ({
    partition: r.partition as string,
    minEventTime: r.min_et as string,
    maxEventTime: r.max_et as string,
    file: r.file as string,
  }));
}

const DROP_ARCHIVED_TARGETS_SQL = `DELETE FROM corr_targets t
 WHERE EXISTS (SELECT 1 FROM straggler.archived_rows a
                WHERE a.pipeline = $1 AND a.min_event_time < t.window_end AND a.max_event_time >= t.window_start)`;

/**
 * Takes out of a correction run's targets (`corr_targets`) the windows archived rows could be in:
 * they are not recomputed, and their late marks stay (clearLateMarks clears only the targets').
 * @returns how many windows were taken out
 */
export async function dropArchivedTargets(db: Queryable, pipeline: string): Promise<number> {
  return (await db.query(DROP_ARCHIVED_TARGETS_SQL, [pipeline])).rowCount ?? 0;
}

const DROP_ARCHIVED_SPANS_SQL = `DELETE FROM sess_spans t
 WHERE EXISTS (SELECT 1 FROM straggler.archived_rows a
                WHERE a.pipeline = $1 AND a.min_event_time < t.we AND a.max_event_time >= t.ws)`;

/**
 * Session windows: takes out of a correction run's spans (`sess_spans`, src/db/sql/stream/sessionSpans.ts)
 * those archived rows could be in; their sessions are not recomputed and their late marks stay.
 * @returns how many spans were taken out
 */
export async function dropArchivedSpans(db: Queryable, pipeline: string): Promise<number> {
  return (await db.query(DROP_ARCHIVED_SPANS_SQL, [pipeline])).rowCount ?? 0;
}
