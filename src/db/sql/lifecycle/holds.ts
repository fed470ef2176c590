/**
 * Holds of a pipeline's published results (tables `straggler.pipeline_holds`
 * and `straggler.held_window_results`, migration 0015; src/lifecycle/hold.ts
 * decides with them). Instants are ISO 8601 UTC strings.
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { Hold, TrippingRow } from "../../../core/model.js";
import { liveVersion } from "../fragments/liveVersion.js";

export type { Hold };

const COLUMNS = "hold_id, pipeline, reason, rule, tripped_by, batch_id, held_at, released_at";

function toHold(r: Record<string, unknown>): Hold {
  return {
    holdId: r.hold_id as number,
    pipeline: r.pipeline as string,
    reason: r.reason as string,
    rule: r.rule as Hold["rule"],
    trippedBy: r.tripped_by as Hold["trippedBy"],
    batchId: r.batch_id as number | null,
    heldAt: r.held_at as string,
    releasedAt: r.released_at as string | null,
  };
}

const OPEN_HOLD_SQL = `SELECT ${COLUMNS} FROM straggler.pipeline_holds WHERE pipeline = $1 AND released_at IS NULL`;

/** @returns the open hold of `pipeline`, or undefined when it is not held */
export async function readOpenHold(client: Queryable, pipeline: string): Promise<Hold | undefined> {
  const r = (await client.query(prepared("read_open_hold", OPEN_HOLD_SQL, [pipeline]))).rows[0];
  return r && toHold(r);
}

/** The open holds of `pipelines` (for metrics and status). */
export async function readOpenHolds(client: Queryable, pipelines: string[]): Promise<Hold[]> {
  const { rows } = await client.query(
    `SELECT ${COLUMNS} FROM straggler.pipeline_holds WHERE pipeline = ANY($1) AND released_at IS NULL ORDER BY pipeline`,
    [pipelines],
  );
  return rows.map(toHold);
}

const PUBLISHED_COLUMNS =
  "group_key, window_start, window_end, event_count, value_sum, value_min, value_max, value_avg, status, revision, updated_at, awaiting_correction, results_version, policy_version";

/**
 * Opens a hold of `pipeline`: records the hold and copies the pipeline's live
 * rows, as `straggler.window_results` shows them, into `held_window_results`
 * (from the commit on, the view serves the copy). Call under the pipeline's
 * results lock, when it is not held.
 * @returns the hold, with the number of windows it keeps published
 */
export async function openHold(
  client: Queryable,
  pipeline: string,
  hold: { reason: string; rule: Hold["rule"]; trippedBy: Hold["trippedBy"]; batchId: number | null },
): Promise<{ hold: Hold; windows: number }> {
  const inserted = await client.query(
    `INSERT INTO straggler.pipeline_holds (pipeline, reason, rule, tripped_by, batch_id) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [pipeline, hold.reason, hold.rule, hold.trippedBy === null ? null : JSON.stringify(hold.trippedBy), hold.batchId],
  );
  // The same expressions as the view's live branch (migration 0015).
  const copied = await client.query(
    `INSERT INTO straggler.held_window_results (pipeline, hold_id, ${PUBLISHED_COLUMNS})
     SELECT r.pipeline, $2, straggler.key_out(r.group_key), r.window_start, r.window_end, r.event_count, r.value_sum, r.value_min, r.value_max,
            CASE WHEN r.event_count > 0 THEN r.value_sum / r.event_count END,
            CASE WHEN r.corrected THEN 'corrected' WHEN r.is_final THEN 'final' ELSE 'open' END,
            r.revision, r.updated_at,
            EXISTS (SELECT 1 FROM straggler.late_windows l
                     WHERE l.pipeline = r.pipeline AND l.group_key = r.group_key AND l.window_start = r.window_start AND l.window_end = r.window_end),
            v.version, v.policy_version
       FROM straggler.window_results_table r
       LEFT JOIN straggler.policy_versions v ON v.pipeline = r.pipeline AND v.state = 'live'
      WHERE r.pipeline = $1 AND r.version = ${liveVersion()}`,
    [pipeline, inserted.rows[0].hold_id],
  );
  return { hold: toHold(inserted.rows[0]), windows: copied.rowCount ?? 0 };
}

/**
 * Ends the open hold of `pipeline` and deletes its copy: in the caller's
 * transaction, so readers see the live results all at once.
 * @returns the released hold, or undefined when it was not held
 */
export async function closeHold(client: Queryable, pipeline: string): Promise<Hold | undefined> {
  const { rows } = await client.query(
    `UPDATE straggler.pipeline_holds
        SET released_at = now(), released_after_batch = (SELECT batch_id FROM straggler.checkpoints WHERE pipeline = $1)
      WHERE pipeline = $1 AND released_at IS NULL RETURNING ${COLUMNS}`,
    [pipeline],
  );
  if (rows.length === 0) return undefined;
  await client.query("DELETE FROM straggler.held_window_results WHERE pipeline = $1", [pipeline]);
  return toHold(rows[0]);
}

const TRIPPING_LIMIT = 100;

/**
 * Quarantined rows of `pipeline` with `seq` in `(afterSeq, lastSeq]`, for `reason` only when given: the first
 * 100 by `seq`, and how many there are.
 */
export async function readQuarantinedInRange(
  client: Queryable,
  pipeline: string,
  afterSeq: number,
  lastSeq: number,
  reason: string | null,
): Promise<{ rows: TrippingRow[]; rowCount: number }> {
  const { rows } = await client.query(
    prepared(
      "read_quarantined_in_range",
      `SELECT seq, event_id, reason, detail, count(*) OVER ()::int AS n FROM straggler.bronze_events
        WHERE pipeline = $1 AND seq > $2 AND seq <= $3 AND status = 'quarantined' AND ($4::text IS NULL OR reason = $4)
        ORDER BY seq LIMIT ${TRIPPING_LIMIT}`,
      [pipeline, afterSeq, lastSeq, reason],
    ),
  );
  return {
    rows: rows.map((r: { seq: number; event_id: string; reason: string | null; detail: string | null }) => ({
      seq: r.seq,
      eventId: r.event_id,
      reason: r.reason,
      detail: r.detail,
    })),
    rowCount: rows[0]?.n ?? 0,
  };
}

/**
 * Rows read and quarantined by (at most) the latest `batches` recorded micro-batches of `pipeline` that ran after its
 * last hold was released (for the quarantine-share rule): `{ rows, quarantined, afterSeq }`, `afterSeq` the
 * start of the oldest of them (null when there are none).
 */
export async function readRecentBatchShares(
  client: Queryable,
  pipeline: string,
  batches: number,
): Promise<{ batches: number; rows: number; quarantined: number; afterSeq: number | null }> {
  if (batches <= 0) return { batches: 0, rows: 0, quarantined: 0, afterSeq: null };
  const { rows } = await client.query(
    prepared(
      "read_recent_batch_shares",
      `SELECT coalesce(sum(num_input_rows + num_quarantined_rows), 0)::bigint AS rows, coalesce(sum(num_quarantined_rows), 0)::bigint AS quarantined,
              min(start_offset) AS after_seq, count(*)::int AS batches
         FROM (SELECT num_input_rows, num_quarantined_rows, start_offset FROM straggler.batch_progress b
                WHERE b.pipeline = $1
                  AND b.batch_id > coalesce((SELECT max(released_after_batch) FROM straggler.pipeline_holds h WHERE h.pipeline = $1), -1)
                ORDER BY batch_id DESC LIMIT $2) recent`,
      [pipeline, batches],
    ),
  );
  return {
    batches: rows[0].batches,
    rows: rows[0].rows,
    quarantined: rows[0].quarantined,
    afterSeq: rows[0].after_seq,
  };
}
