/**
 * Keeps planner statistics fresh on the tables whose plans matter. Normally
 * autovacuum does this; after a bulk load (a replay, a backfill), or on a
 * server with autovacuum off or behind, a table without statistics gets
 * plans that scan a pipeline's whole history per window. A stale table is
 * one changed by more than 10 % (+1000 rows) since its last ANALYZE.
 */
import type { Pool, PoolClient } from "./pool.js";

const TABLES = ["straggler.bronze_events", "straggler.window_results_table", "straggler.late_events", "straggler.late_windows"];

/**
 * ANALYZEs only bronze's `pipeline` and `seq` columns: what the stream's and the
 * landing's plans need to know a pipeline's size (about a quarter of a full
 * ANALYZE's time). Inside a transaction it counts that transaction's own rows.
 */
export async function analyzePipelineColumns(db: Pool | PoolClient): Promise<void> {
  await db.query("ANALYZE straggler.bronze_events (pipeline, seq)");
}

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
 */
export async function analyzeIfStale(pool: Pool, pipeline?: string): Promise<string[]> {
  const { rows } = await pool.query(
    `SELECT schemaname || '.' || relname AS t FROM pg_stat_user_tables
      WHERE schemaname || '.' || relname = ANY($1)
        AND n_mod_since_analyze > 0.1 * n_live_tup + 1000`,
    [TABLES],
  );
  const stale = rows.map((r) => r.t as string);
  // Names come from the fixed list above, never from input.
  for (const t of stale) await pool.query(`ANALYZE ${t}`);
  if (pipeline !== undefined && !stale.includes("straggler.bronze_events") && (await underestimated(pool, pipeline))) {
    await analyzePipelineColumns(pool);
    stale.push("straggler.bronze_events (pipeline, seq)");
  }
  return stale;
}

async function underestimated(pool: Pool, pipeline: string): Promise<boolean> {
  const plan = await pool.query("EXPLAIN (FORMAT JSON) SELECT 1 FROM straggler.bronze_events WHERE pipeline = $1", [pipeline]);
  const estimate = Number(plan.rows[0]["QUERY PLAN"][0].Plan["Plan Rows"]);
  if (estimate >= ESTIMATE_FLOOR) return false;
  const { rows } = await pool.query(
    "SELECT count(*)::int AS n FROM (SELECT 1 FROM straggler.bronze_events WHERE pipeline = $1 LIMIT $2) s",
    [pipeline, PIPELINE_ROWS_CHECKED],
  );
  return rows[0].n >= PIPELINE_ROWS_CHECKED;
}
