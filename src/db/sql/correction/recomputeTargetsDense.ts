/**
 * The dense plan of the correction's recompute (src/correction/plan.ts chooses it): the
 * same result as recomputeTargets.ts (every target window recomputed whole from accepted,
 * not superseded bronze rows up to the run's snapshot; those that differ from the stored
 * value, or that bronze has and the results do not, kept in `corr_changes`), read as ONE
 * event-time range scan of bronze from the earliest target's start to the latest target's
 * end (the BRIN index on event_time serves it), each row assigned its windows and kept
 * when its (key, window) is a target (a hash semi-join on corr_targets), then grouped.
 * Its cost follows the rows in that range, not the number of targets: when the targets
 * are dense in it, one pass over the range beats one index descent per target.
 * A target without rows in bronze gets a count of 0 and null sum, min and max, as the
 * per-window aggregate over no rows gives them.
 */
import { windowSpecOf, type WindowedPipeline } from "../../../core/pipelineSpec.js";
import type { WindowSpec } from "../../../core/windows.js";
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { windowsLateral } from "../fragments/windowAssignment.js";
import { aggregateWindow } from "../fragments/windowAggregates.js";
import { targetChangesSql } from "../fragments/targetChanges.js";
import { notSuperseded } from "../fragments/superseded.js";
import { liveVersion } from "../fragments/liveVersion.js";

/**
 * The windows of bronze row `b` as `w` (window_start, window_end). A tumbling window (size = slide, not a calendar
 * window) is `date_bin` of the event time from the epoch plus the offset: one native call per row, about 1.3 µs,
 * where the general assignment (windowsLateral, exact to the µs through epoch arithmetic) costs 8–25 µs a row.
 * date_bin floors to the stride, so it gives the same start as the core's rule for any instant.
 */
function rowWindows(spec: WindowSpec): string {
  if (spec.calendar !== undefined || spec.sizeMs !== spec.slideMs) return windowsLateral(spec, "b");
  const size = `interval '${Math.trunc(spec.sizeMs)} milliseconds'`;
  const origin = `(timestamptz 'epoch' + interval '${Math.trunc(spec.offsetMs)} milliseconds')`;
  return `CROSS JOIN LATERAL (SELECT date_bin(${size}, b.event_time, ${origin}) AS window_start) w0
    CROSS JOIN LATERAL (SELECT w0.window_start, w0.window_start + ${size} AS window_end) w`;
}

/* `b.seq + 0 <= $2`: not an index range on the sequence key (see recomputeTargets.ts). */
const denseSql = (pipeline: WindowedPipeline) =>
  targetChangesSql(`
    SELECT b.group_key, w.window_start, w.window_end, ${aggregateWindow("b.value")}
      FROM straggler.bronze_events b ${rowWindows(windowSpecOf(pipeline))}
     WHERE b.pipeline = $1 AND b.status = 'accepted' AND b.seq + 0 <= $2 AND ${notSuperseded("b", "$2")}
       AND b.event_time >= (SELECT min(window_start) FROM corr_targets)
       AND b.event_time < (SELECT max(window_end) FROM corr_targets)
       AND (b.group_key, w.window_start, w.window_end) IN (SELECT group_key, window_start, window_end FROM corr_targets)
     GROUP BY b.group_key, w.window_start, w.window_end`);

/*
 * The range scan reads bronze through its BRIN index on event_time, which knows only the page ranges summarized so
 * far: a range filled since the last VACUUM is unsummarized and matches every query (after a replay of 300,000 rows
 * all 73 ranges were, and a one-hour range read 9,239 of 9,367 pages). Summarizing the new ranges first reads only
 * the pages landed since, once.
 */
const SUMMARIZE_SQL = `SELECT brin_summarize_new_values(h.inhrelid) FROM pg_inherits h
 WHERE h.inhparent = 'straggler.bronze_events_event_time_brin'::regclass`;

/**
 * Fills `corr_changes` from `corr_targets` of `pipeline` by one range scan, reading bronze up to `seq` `snapshot`.
 * @throws a data exception (SQLSTATE class 22) when a window's aggregate fails (isolateTargets.ts in the correction)
 */
export async function recomputeTargetsDense(
  client: PoolClient,
  pipeline: WindowedPipeline,
  snapshot: number,
): Promise<void> {
  await client.query(SUMMARIZE_SQL);
  await client.query(prepared("recompute_targets_dense", denseSql(pipeline), [pipeline.name, snapshot]));
}

/** What the plan choice reads: the targets, and the rows the stored windows of their event-time range hold. */
export interface TargetSpread {
  targets: number;
  /**
   * Events the stream counted in the stored windows inside [earliest target start, latest target end), once per event;
   * read from at most `rowsPerTarget × targets + 1` windows, so a larger range says only "at least that many".
   */
  rowsInRange: number;
}

/*
 * Bounded: summing every stored window of a week's range took 142 ms on 100,000 windows, more than
 * the choice can save; the rule needs to know only whether the range holds fewer rows than a
 * bound proportional to the targets, so at most that many windows are read (each holds an event
 * or more), through the (pipeline, window_start) index.
 */
const SPREAD_SQL = `WITH t AS (
  SELECT count(*)::int AS n, min(window_start) AS lo, max(window_end) AS hi FROM corr_targets)
SELECT t.n AS targets, coalesce((SELECT sum(x.event_count) FROM (
         SELECT r.event_count FROM straggler.window_results_table r
          WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND r.window_start >= t.lo AND r.window_start < t.hi AND r.window_end <= t.hi
          LIMIT (SELECT ceil(n * $2::float8)::bigint + 1 FROM t)) x), 0)::float8 AS rows
  FROM t`;

/**
 * The targets of the run and an estimate of the bronze rows the dense plan would read: the stored windows' counts in
 * the targets' range, divided by `windowsPerEvent` (an event is counted in every window it falls in), read from at
 * most `rowsPerTarget × targets + 1` windows.
 */
export async function readTargetSpread(
  client: PoolClient,
  pipeline: string,
  windowsPerEvent: number,
  rowsPerTarget: number,
): Promise<TargetSpread> {
  const params = [pipeline, rowsPerTarget * windowsPerEvent];
  type SpreadRow = { targets: number; rows: number };
  const { rows } = await client.query<SpreadRow>(prepared("read_target_spread", SPREAD_SQL, params));
  const r = rows[0]!;
  return { targets: r.targets, rowsInRange: Math.round(r.rows / windowsPerEvent) };
}
