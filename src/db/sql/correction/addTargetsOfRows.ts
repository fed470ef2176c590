/**
 * Adds to a correction run's targets (`corr_targets`) every final window
 * holding some bronze rows: with sliding windows, a row quarantined for one
 * failing window is in others, which must be recomputed without it.
 */
import { windowSpecOf, type WindowedPipeline } from "../../../core/pipelineSpec.js";
import { windowsLateral } from "../fragments/windowAssignment.js";
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";

const addSql = (pipeline: WindowedPipeline) => `INSERT INTO corr_targets
SELECT DISTINCT b.group_key, w.window_start, w.window_end FROM straggler.bronze_events b ${windowsLateral(windowSpecOf(pipeline), "b")}
 WHERE b.pipeline = $3 AND b.seq = ANY($1::bigint[]) AND w.window_end <= $2
ON CONFLICT DO NOTHING`;

/** Adds the windows of bronze rows `seqs` ending at or before `watermark` (ISO 8601). */
export async function addTargetsOfRows(
  client: PoolClient,
  pipeline: WindowedPipeline,
  seqs: number[],
  watermark: string,
): Promise<void> {
  await client.query(prepared("add_targets_of_rows", addSql(pipeline), [seqs, watermark, pipeline.name]));
}
