/**
 * A version's windows from its own classification (src/lifecycle/rebuild.ts,
 * cutover.ts): the batch oracle of reconcile (DESIGN §9: a full replacement
 * from the accepted, not superseded rows, never a delta), over
 * `straggler.event_classifications` instead of bronze, written to
 * `straggler.window_results_table`. Windows ending at or before the
 * version's watermark are final. A version that holds only its difference
 * from bronze (a retired one, drizzle/0037) is first given, from bronze, the
 * rows of the windows a catch-up recomputes (`fillTouchedWindows`).
 */
import { windowSpecOf, type WindowedPipeline } from "../../../core/pipelineSpec.js";
import type { Queryable } from "../../pool.js";
import { windowsLateral } from "../fragments/windowAssignment.js";
import { aggregateWindow, computedAggregates } from "../fragments/windowAggregates.js";

/** The accepted, not superseded rows of version $2 of pipeline $1, aliased c, with their windows w. */
const acceptedRows = (
  pipeline: WindowedPipeline,
) => `straggler.event_classifications c ${windowsLateral(windowSpecOf(pipeline), "c")}
   WHERE c.pipeline = $1 AND c.version = $2 AND c.status = 'accepted'
     AND NOT EXISTS (SELECT 1 FROM straggler.superseded_versions s WHERE s.pipeline = $1 AND s.version = $2 AND s.seq = c.seq)`;

/**
 * Windows touched by rows with seq above $3: their own windows, and the
 * windows of the rows they superseded. Params $1 pipeline, $2 version, $3 seq.
 */
const touchedSql = (pipeline: WindowedPipeline) => `SELECT DISTINCT c.group_key, w.window_start
    FROM straggler.event_classifications c ${windowsLateral(windowSpecOf(pipeline), "c")}
   WHERE c.pipeline = $1 AND c.version = $2 AND c.status = 'accepted'
     AND (c.seq > $3 OR c.seq IN (SELECT s.seq FROM straggler.superseded_versions s WHERE s.pipeline = $1 AND s.version = $2 AND s.superseded_by > $3))`;

/*
 * $1 pipeline, $2 version, $3 the version's checkpoint seq: bronze's accepted rows up to it in the windows touched
 * by the version's rows above it, which the version lacks (one range read of bronze's (pipeline, group key, event
 * time) index per window).
 */
const fillSql = (pipeline: WindowedPipeline) => `WITH touched AS (
  SELECT DISTINCT c.group_key, w.window_start, w.window_end
    FROM straggler.event_classifications c ${windowsLateral(windowSpecOf(pipeline), "c")}
   WHERE c.pipeline = $1 AND c.version = $2 AND c.status = 'accepted'
     AND (c.seq > $3 OR c.seq IN (SELECT s.seq FROM straggler.superseded_versions s WHERE s.pipeline = $1 AND s.version = $2 AND s.superseded_by > $3)))
INSERT INTO straggler.event_classifications (pipeline, version, seq, event_id, event_time, group_key, value, status, reason, detail, differs)
SELECT DISTINCT $1, $2::int, b.seq, b.event_id, b.event_time, b.group_key, b.value, b.status, b.reason, b.detail, false
  FROM touched t
  JOIN straggler.bronze_events b ON b.pipeline = $1 AND b.group_key = t.group_key AND b.event_time >= t.window_start AND b.event_time < t.window_end
       AND b.status = 'accepted' AND b.seq <= $3
 WHERE NOT EXISTS (SELECT 1 FROM straggler.event_classifications c WHERE c.pipeline = $1 AND c.version = $2 AND c.seq = b.seq)
ON CONFLICT (pipeline, version, seq) DO NOTHING`;

/**
 * Gives `version` of `pipeline`, which holds its rows up to seq `after` as its difference from bronze, bronze's
 * accepted rows up to `after` that it lacks in the windows its rows above `after` touch: they are its own
 * (unmarked), and `computeVersionWindows(…, after)` recomputes those windows whole from its rows.
 */
export async function fillTouchedWindows(
  client: Queryable,
  pipeline: WindowedPipeline,
  version: number,
  after: number,
): Promise<void> {
  await client.query(fillSql(pipeline), [pipeline.name, version, after]);
}

/**
 * Computes the windows of `version` into `straggler.window_results_table`:
 * all of them (`after` null: the version's windows are replaced), or only
 * those touched by rows with seq above `after` (a catch-up: each touched
 * window replaced whole; its revision goes up when its value changes).
 * @param watermark ISO instant; windows ending at or before it are final; null: none is
 * @param batchId recorded as each window's last batch
 * @returns the windows written
 */
export async function computeVersionWindows(
  client: Queryable,
  pipeline: WindowedPipeline,
  version: number,
  watermark: string | null,
  batchId: number,
  after: number | null,
): Promise<number> {
  const params = [pipeline.name, version, after ?? 0, watermark, batchId];
  if (after === null)
    await client.query("DELETE FROM straggler.window_results_table WHERE pipeline = $1 AND version = $2", [
      pipeline.name,
      version,
    ]);
  const onlyTouched = after === null ? "" : `AND (c.group_key, w.window_start) IN (SELECT * FROM touched)`;
  const { rowCount } = await client.query(
    `WITH touched AS (${after === null ? "SELECT NULL::text, NULL::timestamptz WHERE false" : touchedSql(pipeline)}),
     fresh AS (SELECT c.group_key, w.window_start, w.window_end, ${aggregateWindow("c.value")}
                 FROM ${acceptedRows(pipeline)} ${onlyTouched}
                GROUP BY 1, 2, 3),
     gone AS (DELETE FROM straggler.window_results_table r
               WHERE r.pipeline = $1 AND r.version = $2 AND $3::bigint > 0 AND (r.group_key, r.window_start) IN (SELECT * FROM touched)
                 AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.group_key = r.group_key AND f.window_start = r.window_start))
     INSERT INTO straggler.window_results_table AS r (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final, last_batch_id)
     SELECT $1, $2, group_key, window_start, window_end, ${computedAggregates()}, $4::timestamptz IS NOT NULL AND window_end <= $4::timestamptz, $5 FROM fresh
     ON CONFLICT (pipeline, version, group_key, window_start, window_end) DO UPDATE
        SET event_count = EXCLUDED.event_count, value_sum = EXCLUDED.value_sum, value_min = EXCLUDED.value_min, value_max = EXCLUDED.value_max,
            is_final = EXCLUDED.is_final, last_batch_id = EXCLUDED.last_batch_id, updated_at = now(),
            revision = r.revision + CASE WHEN (r.event_count, r.value_sum, r.value_min, r.value_max)
                                       IS DISTINCT FROM (EXCLUDED.event_count, EXCLUDED.value_sum, EXCLUDED.value_min, EXCLUDED.value_max) THEN 1 ELSE 0 END,
            corrected = r.corrected OR (r.is_final AND (r.event_count, r.value_sum, r.value_min, r.value_max)
                                       IS DISTINCT FROM (EXCLUDED.event_count, EXCLUDED.value_sum, EXCLUDED.value_min, EXCLUDED.value_max))`,
    params,
  );
  // Windows that the watermark closed but no row touched become final too.
  if (watermark !== null) {
    await client.query(
      "UPDATE straggler.window_results_table SET is_final = true WHERE pipeline = $1 AND version = $2 AND NOT is_final AND window_end <= $3",
      [pipeline.name, version, watermark],
    );
  }
  return rowCount ?? 0;
}

/** The latest event time (ISO) of the accepted, not superseded rows of `version` with seq above `after`; null when none. */
export async function versionMaxEventTime(
  client: Queryable,
  pipeline: string,
  version: number,
  after = 0,
): Promise<string | null> {
  const { rows } = await client.query(
    `SELECT max(c.event_time) AS t FROM straggler.event_classifications c
      WHERE c.pipeline = $1 AND c.version = $2 AND c.status = 'accepted' AND c.seq > $3
        AND NOT EXISTS (SELECT 1 FROM straggler.superseded_versions s WHERE s.pipeline = $1 AND s.version = $2 AND s.seq = c.seq)`,
    [pipeline, version, after],
  );
  return rows[0].t;
}

/** A window of a version whose stored value differs from its recompute (or that only one of them has). */
export interface VersionMismatch {
  groupKey: string;
  windowStart: string;
  windowEnd: string;
  stored: number | null;
  expected: number | null;
}

/** Reconcile of a version: its stored windows against a fresh recompute from its classification (count, sum, min, max). */
export async function compareVersionWindows(
  client: Queryable,
  pipeline: WindowedPipeline,
  version: number,
): Promise<{ checked: number; mismatches: VersionMismatch[] }> {
  const { rows } = await client.query(
    `WITH fresh AS (SELECT c.group_key, w.window_start, w.window_end, ${aggregateWindow("c.value")} FROM ${acceptedRows(pipeline)} GROUP BY 1, 2, 3),
          stored AS (SELECT group_key, window_start, window_end, event_count AS n, value_sum AS s, value_min AS lo, value_max AS hi
                       FROM straggler.window_results_table WHERE pipeline = $1 AND version = $2)
     SELECT coalesce(f.group_key, t.group_key) AS group_key, coalesce(f.window_start, t.window_start) AS window_start,
            coalesce(f.window_end, t.window_end) AS window_end, t.n AS stored, f.n AS expected,
            (${computedAggregates("t")}) IS DISTINCT FROM (${computedAggregates("f")}) AS differs
       FROM fresh f FULL JOIN stored t USING (group_key, window_start, window_end)`,
    [pipeline.name, version],
  );
  return {
    checked: rows.length,
    mismatches: rows
      .filter((r) => r.differs)
      .map((r) => ({
        groupKey: r.group_key,
        windowStart: r.window_start,
        windowEnd: r.window_end,
        stored: r.stored,
        expected: r.expected,
      })),
  };
}
