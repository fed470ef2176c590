/**
 * Picks the windows a correction run examines into `corr_targets`
 * (createRunTables.ts): every window awaiting correction, and on request
 * every final window overlapping a time range — those stored and those
 * bronze says should exist — optionally only some group keys. Only windows
 * ending at or before the watermark: the stream still owns the others (DESIGN §9).
 */
import { windowSpecOf, type WindowedPipeline } from "../../../core/pipelineSpec.js";
import { longestWindowMs } from "../../../core/windows.js";
import { windowsLateral } from "../fragments/windowAssignment.js";
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { liveVersion } from "../fragments/liveVersion.js";

export interface TargetRequest {
  /** Bronze rows up to this `seq` (the stream's checkpoint) are read. */
  snapshot: number;
  /** The stream's watermark (ISO 8601). */
  watermark: string;
  /** Also every final window overlapping `[from, to)` (ISO instants); null: only windows awaiting correction (all of them). */
  range: { from: string; to: string } | null;
  /** Only these stored group keys; null: all. */
  keys: string[] | null;
}

const ADD_LATE_WINDOWS_SQL = `INSERT INTO corr_targets
SELECT group_key, window_start, window_end FROM straggler.late_windows
 WHERE pipeline = $1 AND window_end <= $2
   AND ($3::timestamptz IS NULL OR (window_start < $4 AND window_end > $3))
   AND ($5::text[] IS NULL OR group_key = ANY($5))
ON CONFLICT DO NOTHING`;

const ADD_STORED_WINDOWS_SQL = `INSERT INTO corr_targets
SELECT group_key, window_start, window_end FROM straggler.window_results_table
 WHERE pipeline = $1 AND version = ${liveVersion()} AND window_end <= $2 AND window_start < $4 AND window_end > $3
   AND ($5::text[] IS NULL OR group_key = ANY($5))
ON CONFLICT DO NOTHING`;

/* `b.seq + 0 <= snapshot`: not an index range on the sequence key (see recomputeTargets.ts). */
const addBronzeWindowsSql = (pipeline: WindowedPipeline) => `INSERT INTO corr_targets
SELECT DISTINCT b.group_key, w.window_start, w.window_end
  FROM straggler.bronze_events b ${windowsLateral(windowSpecOf(pipeline), "b")}
 WHERE b.pipeline = $1 AND b.status = 'accepted' AND b.seq + 0 <= $6
   AND b.event_time >= $3::timestamptz - $7 * interval '1 millisecond' AND b.event_time < $4
   AND w.window_end <= $2 AND w.window_start < $4 AND w.window_end > $3
   AND ($5::text[] IS NULL OR b.group_key = ANY($5))
ON CONFLICT DO NOTHING`;

const COUNT_TARGETS_SQL = "SELECT count(*)::int AS n FROM corr_targets";

/**
 * Fills `corr_targets` for `req`, in the run's transaction `client`.
 * @returns the number of windows picked
 */
export async function collectTargets(
  client: PoolClient,
  pipeline: WindowedPipeline,
  req: TargetRequest,
): Promise<number> {
  const params = [pipeline.name, req.watermark, req.range?.from ?? null, req.range?.to ?? null, req.keys];
  await client.query(prepared("add_late_windows", ADD_LATE_WINDOWS_SQL, params));
  if (req.range) {
    await client.query(prepared("add_stored_windows", ADD_STORED_WINDOWS_SQL, params));
    await client.query(
      prepared("add_bronze_windows", addBronzeWindowsSql(pipeline), [
        ...params,
        req.snapshot,
        longestWindowMs(windowSpecOf(pipeline)),
      ]),
    );
  }
  return (await client.query(prepared("count_targets", COUNT_TARGETS_SQL))).rows[0].n;
}
