/**
 * Amended events in the stream (`admission.dedupe: latest`, README "Amended
 * events"): when a batch holds a row that supersedes a version the stream
 * read in an earlier batch, that version's windows must lose it. The new
 * version reaches its own windows as any row does (the batch's pairs); the
 * old version's windows are corrected here, in the batch's transaction, after
 * its MERGE and before windows are finalized:
 *
 *   - a window the stream still owns (stored, not final) is recomputed from
 *     bronze up to the batch's end — a full replacement, never a delta (a
 *     minimum or maximum cannot be taken back). Every pair of an open window
 *     was on time (a window is final once its end passes the watermark), so
 *     the recompute is exactly what the stream holds, less the old version;
 *     a window left with no rows keeps its row at count 0;
 *   - any other window (final, or never stored) is registered in
 *     `straggler.late_windows` (awaiting correction, 0 dropped rows, up to the
 *     superseding `seq`): the correction job recomputes it (DESIGN §9).
 */
import type { WindowSpec } from "../../../core/windows.js";
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { CHANGE_COLUMNS, changeRow, stored } from "../fragments/changeRows.js";
import { aggregateWindow, storedAggregates } from "../fragments/windowAggregates.js";
import { notSuperseded } from "../fragments/superseded.js";
import { windowsLateral } from "../fragments/windowAssignment.js";
import type { BatchRange } from "../stream/readBatch.js";
import { liveVersion } from "../fragments/liveVersion.js";

/** $1 pipeline, $2 batch start (exclusive), $3 batch end: the windows of versions read before and superseded in the batch. */
const oldWindows = (
  spec: WindowSpec,
) => `SELECT o.group_key, w.window_start, w.window_end, max(s.superseded_by) AS max_seq
    FROM straggler.superseded_events s
    JOIN straggler.bronze_events o ON o.pipeline = s.pipeline AND o.seq = s.seq
    ${windowsLateral(spec, "o")}
   WHERE s.pipeline = $1 AND s.superseded_by > $2 AND s.superseded_by <= $3 AND s.seq <= $2
   GROUP BY 1, 2, 3`;

const recomputeSet = `SET event_count = f.n, value_sum = f.s, value_min = f.lo, value_max = f.hi, last_batch_id = $4, updated_at = now()
  FROM old
  CROSS JOIN LATERAL (
    SELECT ${aggregateWindow("b.value")}
      FROM straggler.bronze_events b
     WHERE b.pipeline || '' = $1 AND b.group_key = old.group_key AND b.status = 'accepted' AND b.seq + 0 <= $3 AND ${notSuperseded("b", "$3")}
       AND b.event_time >= old.window_start AND b.event_time < old.window_end) f
 WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND r.group_key = old.group_key AND r.window_start = old.window_start AND r.window_end = old.window_end
   AND NOT r.is_final`;

// With the change feed (`feed`, src/db/sql/fragments/changeRows.ts): `up` returns each recomputed
// window's new aggregates, `prev` holds them before the UPDATE (the statement's snapshot); a window
// whose aggregates did not change (the new version landed in it too, with the same value) is no change.
const recomputeOpenSql = (spec: WindowSpec, feed: boolean) =>
  !feed
    ? `WITH old AS (${oldWindows(spec)})
UPDATE straggler.window_results_table r
   ${recomputeSet}`
    : `WITH old AS (${oldWindows(spec)}),
prev AS (
  SELECT r.group_key, r.window_start, r.window_end, ${storedAggregates("r")}
    FROM straggler.window_results_table r JOIN old USING (group_key, window_start, window_end)
   WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND NOT r.is_final),
up AS (
UPDATE straggler.window_results_table r
   ${recomputeSet}
RETURNING r.group_key, r.window_start, r.window_end, r.revision, ${storedAggregates("r")}),
feed AS (
  INSERT INTO straggler.window_changes (${CHANGE_COLUMNS}, batch_id)
  SELECT ${changeRow({ pipeline: "$1", change: "'updated'", key: "up.group_key", start: "up.window_start", end: "up.window_end", revision: "up.revision", before: stored("p"), after: stored("up") })}, $4
    FROM up JOIN prev p USING (group_key, window_start, window_end)
   WHERE (${storedAggregates("up")}) IS DISTINCT FROM (${storedAggregates("p")}))
SELECT 1 FROM up`;

const registerFinalSql = (spec: WindowSpec) => `WITH old AS (${oldWindows(spec)})
INSERT INTO straggler.late_windows AS l (pipeline, group_key, window_start, window_end, dropped_rows, max_seq, first_batch_id, last_batch_id)
SELECT $1, old.group_key, old.window_start, old.window_end, 0, old.max_seq, $4, $4
  FROM old
 WHERE NOT EXISTS (SELECT 1 FROM straggler.window_results_table r
                    WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND r.group_key = old.group_key AND r.window_start = old.window_start
                      AND r.window_end = old.window_end AND NOT r.is_final)
ON CONFLICT (pipeline, group_key, window_start, window_end) DO UPDATE
  SET max_seq = greatest(l.max_seq, excluded.max_seq), last_batch_id = excluded.last_batch_id`;

/** What the batch did to the windows of the versions its rows superseded. */
export interface SupersededWindows {
  /** Open windows recomputed without the superseded versions. */
  recomputed: number;
  /** Final (or never stored) windows registered for correction. */
  registered: number;
}

/**
 * Corrects the windows of the versions that rows of batch `range` superseded
 * and the stream had read before (see the module comment). Run after the
 * batch's MERGE and before its finalization, in its transaction.
 * @param batchId the batch's id (written as the windows' `last_batch_id`, the late windows' batch)
 * @param feed the pipeline keeps a change feed (`feed.enabled`): the recompute writes its changes in the same statement
 * @throws the database's error
 */
export async function correctSupersededWindows(
  client: PoolClient,
  pipeline: string,
  spec: WindowSpec,
  range: BatchRange,
  batchId: number,
  feed = false,
): Promise<SupersededWindows> {
  const params = [pipeline, range.afterSeq, range.lastSeq, batchId];
  // Nothing to do for almost every batch: one index probe says so.
  const any = await client.query(
    prepared(
      "superseded_any",
      "SELECT 1 FROM straggler.superseded_events WHERE pipeline = $1 AND superseded_by > $2 AND superseded_by <= $3 LIMIT 1",
      params.slice(0, 3),
    ),
  );
  if (any.rowCount === 0) return { recomputed: 0, registered: 0 };
  const recomputed = (await client.query(recomputeOpenSql(spec, feed), params)).rowCount ?? 0;
  const registered = (await client.query(registerFinalSql(spec), params)).rowCount ?? 0;
  return { recomputed, registered };
}
