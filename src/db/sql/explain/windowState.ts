/**
 * What one key's window is now, and the pipeline's holds: the live results rows of the key
 * starting at `start` (one for a fixed-length or calendar window; a session row there), the
 * sessions of the key overlapping a span, and every hold of the pipeline. Instants are ISO 8601
 * UTC strings, values numeric strings.
 */
import type { HistoryHold } from "../../../core/historyTypes.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { liveVersion } from "../fragments/liveVersion.js";

/** A live results row. */
export interface WindowStateRow {
  windowStart: string;
  windowEnd: string;
  count: number;
  sum: string | null;
  min: string | null;
  max: string | null;
  isFinal: boolean;
  corrected: boolean;
  revision: number;
  lastBatchId: number | null;
  updatedAt: string;
}

const ROW_COLUMNS =
  "window_start, window_end, event_count, value_sum, value_min, value_max, is_final, corrected, revision, last_batch_id, updated_at";

function toRow(r: Record<string, unknown>): WindowStateRow {
  return {
    windowStart: r.window_start as string,
    windowEnd: r.window_end as string,
    count: Number(r.event_count),
    sum: r.value_sum as string | null,
    min: r.value_min as string | null,
    max: r.value_max as string | null,
    isFinal: r.is_final as boolean,
    corrected: r.corrected as boolean,
    revision: r.revision as number,
    lastBatchId: r.last_batch_id === null ? null : Number(r.last_batch_id),
    updatedAt: r.updated_at as string,
  };
}

const ROW_SQL = `SELECT ${ROW_COLUMNS} FROM straggler.window_results_table
 WHERE pipeline = $1 AND version = ${liveVersion()} AND group_key = $2 AND window_start = $3 AND window_end = $4`;

/**
 * @returns the key's live row of the window `[start, end)` (ISO 8601), or undefined
 * @throws the database's error when it cannot be reached
 */
export async function readWindowRow(
  client: Queryable,
  pipeline: string,
  groupKey: string,
  start: string,
  end: string,
): Promise<WindowStateRow | undefined> {
  const r = (await client.query(prepared("explain_window_row", ROW_SQL, [pipeline, groupKey, start, end]))).rows[0];
  return r && toRow(r);
}

// One key's sessions never overlap: the one holding `at` is the last starting at or before it (a backward read of the primary key).
const SESSION_AT_SQL = `SELECT ${ROW_COLUMNS} FROM (SELECT * FROM straggler.window_results_table
 WHERE pipeline = $1 AND version = ${liveVersion()} AND group_key = $2 AND window_start <= $3 ORDER BY window_start DESC LIMIT 1) s WHERE window_end > $3`;

/**
 * @returns the key's live session holding the instant `at` (ISO 8601), or undefined
 * @throws the database's error when it cannot be reached
 */
export async function readSessionAt(
  client: Queryable,
  pipeline: string,
  groupKey: string,
  at: string,
): Promise<WindowStateRow | undefined> {
  const r = (await client.query(prepared("explain_session_at", SESSION_AT_SQL, [pipeline, groupKey, at]))).rows[0];
  return r && toRow(r);
}

/** A hold of the pipeline's published results. */
export interface HoldRow extends HistoryHold {
  releasedAfterBatch: number | null;
}

const HOLDS_SQL = `SELECT hold_id, reason, rule, batch_id, held_at, released_at, released_after_batch
  FROM straggler.pipeline_holds WHERE pipeline = $1 ORDER BY hold_id`;

/** @throws the database's error when it cannot be reached */
export async function readHolds(client: Queryable, pipeline: string): Promise<HoldRow[]> {
  const { rows } = await client.query(prepared("explain_holds", HOLDS_SQL, [pipeline]));
  return rows.map((r) => ({
    holdId: Number(r.hold_id),
    reason: r.reason as string,
    rule: r.rule as string | null,
    batchId: r.batch_id === null ? null : Number(r.batch_id),
    heldAt: r.held_at as string,
    releasedAt: r.released_at as string | null,
    releasedAfterBatch: r.released_after_batch === null ? null : Number(r.released_after_batch),
  }));
}

/** The live results version and when it went live, and the window's row in the version it replaced, as the cutover stored it. */
export interface CutoverRow {
  version: number;
  liveSince: string;
  previousVersion: number;
  previous: { count: number; sum: string | null; min: string | null; max: string | null } | null;
}

const CUTOVER_SQL = `SELECT l.version, l.live_since, p.version AS previous_version, w.event_count, w.value_sum, w.value_min, w.value_max
  FROM straggler.policy_versions l
  CROSS JOIN LATERAL (SELECT version FROM straggler.policy_versions o
                       WHERE o.pipeline = l.pipeline AND o.state = 'retired' AND o.live_since IS NOT NULL AND o.live_since < l.live_since
                       ORDER BY o.live_since DESC LIMIT 1) p
  LEFT JOIN straggler.window_results_table w
         ON w.pipeline = l.pipeline AND w.version = p.version AND w.group_key = $2 AND w.window_start = $3 AND w.window_end = $4
 WHERE l.pipeline = $1 AND l.state = 'live' AND l.live_since IS NOT NULL`;

/**
 * The last cutover (or rollback) of the pipeline, when its live version replaced a version that was live before.
 * @returns undefined when the live version is the pipeline's first
 * @throws the database's error when it cannot be reached
 */
export async function readLastCutover(
  client: Queryable,
  pipeline: string,
  groupKey: string,
  start: string,
  end: string,
): Promise<CutoverRow | undefined> {
  const r = (await client.query(prepared("explain_last_cutover", CUTOVER_SQL, [pipeline, groupKey, start, end])))
    .rows[0];
  if (r === undefined) return undefined;
  return {
    version: r.version as number,
    liveSince: r.live_since as string,
    previousVersion: r.previous_version as number,
    previous:
      r.event_count === null
        ? null
        : { count: Number(r.event_count), sum: r.value_sum, min: r.value_min, max: r.value_max },
  };
}
