/**
 * Which closed bronze partitions the archive step archives now, and why not the others: each
 * pipeline with rows in a partition must have a retention setting, a stream that has read them, no
 * rebuild running and its rows past the correction horizon (src/retention/archive.ts archives them).
 */
import { formatDuration } from "../config/duration.js";
import type { PipelineConfig } from "../config/pipelines.js";
import type { PipelineInPartition } from "../core/model.js";
import type { Queryable } from "../db/pool.js";
import { listPartitions, type BronzePartition } from "../db/sql/retention/partitions.js";
import {
  readPipelinesInPartition,
  readRebuildingPipelines,
  readRestoredPartitions,
  readStreamPositions,
} from "../db/sql/retention/archives.js";

/** Why a partition is or is not archived now. */
export interface PartitionVerdict {
  partition: string;
  rangeStart: string;
  rangeEnd: string;
  rows: number;
  archivable: boolean;
  /** Restored from its archives earlier (the service leaves such a partition alone; `straggler archive` archives it again). */
  restored: boolean;
  /** Why not, one line per pipeline that holds it back (empty when archivable). */
  reasons: string[];
  pipelines: PipelineInPartition[];
}

/**
 * Each closed partition (its month has ended) with its verdict, oldest first.
 * @param now the clock, ms (tests)
 */
export async function planArchive(
  db: Queryable,
  pipelines: PipelineConfig[],
  now = Date.now(),
): Promise<PartitionVerdict[]> {
  const byName = new Map(pipelines.map((p) => [p.name, p]));
  const restored = await readRestoredPartitions(db);
  const closed = (await listPartitions(db)).filter(
    (p): p is BronzePartition & { rangeStart: string; rangeEnd: string } =>
      p.rangeEnd !== null && Date.parse(p.rangeEnd) <= now,
  );
  const verdicts: PartitionVerdict[] = [];
  for (const part of closed) {
    const inIt = await readPipelinesInPartition(db, part.name);
    const names = inIt.map((p) => p.pipeline);
    const checkpoints = await readStreamPositions(db, names);
    const rebuilding = await readRebuildingPipelines(db, names);
    const reasons: string[] = [];
    for (const p of inIt) {
      const config = byName.get(p.pipeline);
      const cp = checkpoints.get(p.pipeline);
      if (!config)
        reasons.push(
          `${p.pipeline}: has ${p.rows} rows here and is not in the pipelines file (its horizon is unknown)`,
        );
      else if (!config.retention)
        reasons.push(`${p.pipeline}: has ${p.rows} rows here and no retention setting (its rows are kept)`);
      else if (!cp || cp.lastSeq < p.maxSeq)
        reasons.push(
          `${p.pipeline}: the stream has not read all its rows here yet (up to seq ${p.maxSeq}; checkpoint ${cp?.lastSeq ?? 0})`,
        );
      else if (rebuilding.has(p.pipeline)) reasons.push(`${p.pipeline}: a rebuild is running`);
      else if (p.maxEventTime !== null) {
        const horizonMs = config.retention.correctionHorizon;
        const cutoff = cp.watermark === null ? null : Date.parse(cp.watermark) - horizonMs;
        if (cutoff === null || Date.parse(p.maxEventTime) >= cutoff) {
          reasons.push(
            `${p.pipeline}: event times up to ${p.maxEventTime} are within the correction horizon (${formatDuration(horizonMs)} behind the watermark ${cp.watermark ?? "(none yet)"}` +
              `${cutoff === null ? "" : `, i.e. from ${new Date(cutoff).toISOString()}`})`,
          );
        }
      }
    }
    verdicts.push({
      partition: part.name,
      rangeStart: part.rangeStart,
      rangeEnd: part.rangeEnd,
      rows: inIt.reduce((n, p) => n + p.rows, 0),
      archivable: reasons.length === 0,
      restored: restored.has(part.name),
      reasons,
      pipelines: inIt,
    });
  }
  return verdicts;
}
