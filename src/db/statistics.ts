/**
 * Keeps planner statistics fresh on the tables whose plans matter. Normally
 * autovacuum does this; after a bulk load (a replay, a backfill), or on a
 * server with autovacuum off or behind, a table without statistics gets
 * plans that scan a pipeline's whole history per window. A stale table is
 * one changed by more than 10 % (+1000 rows) since its last ANALYZE.
 */
import type { Pool } from "./pool.js";

const TABLES = ["straggler.bronze_events", "straggler.window_results_table", "straggler.late_events", "straggler.late_windows"];

/** ANALYZEs each of our hot tables whose statistics are stale; returns the ones analysed. */
export async function analyzeIfStale(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query(
    `SELECT schemaname || '.' || relname AS t FROM pg_stat_user_tables
      WHERE schemaname || '.' || relname = ANY($1)
        AND n_mod_since_analyze > 0.1 * n_live_tup + 1000`,
    [TABLES],
  );
  const stale = rows.map((r) => r.t as string);
  // Names come from the fixed list above, never from input.
  for (const t of stale) await pool.query(`ANALYZE ${t}`);
  return stale;
}
