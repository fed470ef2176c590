/**
 * Keeps planner statistics fresh on the tables whose plans matter. Normally
 * autovacuum does this; after a bulk load (a replay, a backfill), or on a
 * server with autovacuum off or behind, a table without statistics gets
 * plans that scan a pipeline's whole history per window. A stale table is
 * one changed by more than 10 % (+1000 rows) since its last ANALYZE.
 */
import type { Pool } from "./pool.js";
import {
  analyzePipelineColumns,
  analyzeResultsPipeline,
  analyzeTable,
  countPipelineRows,
  countPipelineWindows,
  estimatePipelineRows,
  estimatePipelineWindows,
  readStaleTables,
  reportPendingCounts,
} from "./sql/observe/plannerStatistics.js";

/** The hot tables whose statistics `analyzeIfStale` keeps fresh (qualified names). */
export const STATISTICS_TABLES = [
  "straggler.bronze_events",
  "straggler.window_results_table",
  "straggler.late_events",
  "straggler.late_windows",
];

/** A pipeline with at least this many bronze rows must not be estimated below ESTIMATE_FLOOR. */
const PIPELINE_ROWS_CHECKED = 10_000;
const ESTIMATE_FLOOR = 1_000;

/**
 * ANALYZEs each of our hot tables whose statistics are stale; returns the ones
 * analysed. With `pipeline`, also ANALYZEs bronze's pipeline and seq columns
 * when the planner estimates that pipeline at fewer than 1,000 rows while it
 * has 10,000 or more. The table-wide 10 % rule misses this: a pipeline that
 * appeared after the last ANALYZE in a large table is estimated at ~0 rows,
 * and then every index leading with pipeline looks free, so each micro-batch
 * and each corrected window would scan the whole pipeline. Costs one EXPLAIN
 * and an index scan of at most 10,000 entries.
 * @param concurrently (option) analyse the stale tables each on its own connection of `pool`, at once (default: one after the other)
 */
export async function analyzeIfStale(
  pool: Pool,
  pipeline?: string,
  { concurrently = false }: { concurrently?: boolean } = {},
): Promise<string[]> {
  const stale = await readStaleTables(pool, STATISTICS_TABLES);
  // Names come from the fixed list above, never from input.
  if (concurrently) await Promise.all(stale.map((t) => analyzeTable(pool, t)));
  else for (const t of stale) await analyzeTable(pool, t);
  if (
    pipeline !== undefined &&
    !stale.includes("straggler.bronze_events") &&
    (await refreshPipelineEstimate(pool, pipeline))
  ) {
    stale.push("straggler.bronze_events (pipeline, seq)");
  }
  return stale;
}

/**
 * `analyzeIfStale` at the end of a bulk load on `pool` (a replay; `ingest --stream` before it streams): first
 * every idle connection of `pool` reports the table counts it has not reported yet
 * (src/db/sql/observe/plannerStatistics.ts), so that the check sees the load's last second of writes too; then
 * the stale tables are analysed each on a connection of its own, at once (nothing else runs on `pool` then:
 * after a 300k-event replay bronze took 371 ms and the results 240 ms, one after the other). Without the report,
 * the next command's check (a correction's) found the results table stale again and ANALYZEd it a second time:
 * 148 ms of a 300k-event correction run of 290 ms (BENCHMARKS.md, issue 30, round fourteen).
 * @returns the tables analysed, as `analyzeIfStale`
 * @throws the database's error
 */
export async function analyzeAfterLoad(pool: Pool, pipeline: string): Promise<string[]> {
  const clients = await Promise.all(Array.from({ length: pool.idleCount }, () => pool.connect()));
  try {
    await Promise.all(clients.map((c) => reportPendingCounts(c)));
  } finally {
    for (const c of clients) c.release();
  }
  return analyzeIfStale(pool, pipeline, { concurrently: true });
}

/**
 * Only the pipeline part of `analyzeIfStale`: ANALYZEs bronze's `pipeline`
 * and `seq` columns when the planner estimates `pipeline` at fewer than 1,000
 * rows while it has 10,000 or more. What a long run of small landings needs
 * between full refreshes (a replay): the stream's statements read a batch by
 * its `seq` range and probe the results by key, which a stale table-wide
 * sample does not mislead, but an index leading with a pipeline estimated at
 * ~0 rows looks free. Costs one EXPLAIN and an index scan of at most 10,000
 * entries; a table-wide ANALYZE of bronze costs a sample of 30,000 rows
 * (about 0.2-0.6 s on the taxi replay's bronze).
 * @returns true when it ANALYZEd
 */
export async function refreshPipelineEstimate(pool: Pool, pipeline: string): Promise<boolean> {
  if (!(await underestimated(pool, pipeline))) return false;
  await analyzePipelineColumns(pool);
  return true;
}

async function underestimated(pool: Pool, pipeline: string): Promise<boolean> {
  if ((await estimatePipelineRows(pool, pipeline)) >= ESTIMATE_FLOOR) return false;
  return (await countPipelineRows(pool, pipeline, PIPELINE_ROWS_CHECKED)) >= PIPELINE_ROWS_CHECKED;
}

/** A pipeline with at least this many windows must be estimated at no less than a quarter of them. */
const PIPELINE_WINDOWS_CHECKED = 1_000;

/**
 * ANALYZEs the results table's `pipeline` column when the planner estimates
 * `pipeline`'s windows at less than a quarter of their number (counted up to
 * 10,000) while it has 1,000 or more: a pipeline whose windows appeared since
 * the last ANALYZE (a replay into a fresh database, autovacuum off or behind).
 * Estimated at a handful of windows, a micro-batch's MERGE hashes every window
 * of the pipeline (4,800 on the taxi replay after a quarter of its spans, 10
 * to 60 ms) instead of probing the batch's dozen by key. Costs one EXPLAIN and
 * an index scan of at most 10,000 entries.
 * @returns true when it ANALYZEd
 */
export async function refreshResultsEstimate(pool: Pool, pipeline: string): Promise<boolean> {
  const windows = await countPipelineWindows(pool, pipeline, PIPELINE_ROWS_CHECKED);
  if (windows < PIPELINE_WINDOWS_CHECKED || (await estimatePipelineWindows(pool, pipeline)) >= windows / 4)
    return false;
  await analyzeResultsPipeline(pool);
  return true;
}
