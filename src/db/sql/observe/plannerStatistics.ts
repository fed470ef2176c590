/**
 * The planner-statistics statements of src/db/statistics.ts: which hot tables
 * are stale, ANALYZE, and the planner's estimate of one pipeline's bronze rows
 * against their count.
 */
import type { Queryable } from "../../pool.js";
import { liveVersion } from "../fragments/liveVersion.js";

// Bronze is partitioned (migration 0023): PostgreSQL counts no changes on a partitioned table and
// autovacuum never ANALYZEs one (only its partitions), so bronze is stale when its partitions' live
// rows exceed its row count at its last ANALYZE (reltuples, -1 before the first) by 10 % + 1000.
const READ_STALE_TABLES_SQL = `SELECT schemaname || '.' || relname AS t FROM pg_stat_user_tables
      WHERE schemaname || '.' || relname = ANY($1) AND relname <> 'bronze_events'
        AND n_mod_since_analyze > 0.1 * n_live_tup + 1000
      UNION ALL
      SELECT 'straggler.bronze_events' WHERE 'straggler.bronze_events' = ANY($1)
        AND (SELECT coalesce(sum(s.n_live_tup), 0) FROM pg_stat_user_tables s JOIN pg_partition_tree('straggler.bronze_events') p ON p.relid = s.relid WHERE p.isleaf)
            > 1.1 * greatest((SELECT reltuples FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass), 0) + 1000`;
const ANALYZE_PIPELINE_COLUMNS_SQL = "ANALYZE straggler.bronze_events (pipeline, seq)";
const ESTIMATE_PIPELINE_ROWS_SQL = "EXPLAIN (FORMAT JSON) SELECT 1 FROM straggler.bronze_events WHERE pipeline = $1";
const COUNT_PIPELINE_ROWS_SQL =
  "SELECT count(*)::int AS n FROM (SELECT 1 FROM straggler.bronze_events WHERE pipeline = $1 LIMIT $2) s";

// PostgreSQL 15+ (cumulative statistics in shared memory): a session reports its changes' counts when it goes idle,
// at most once a second, so the last second of a busy connection's writes is invisible to pg_stat_user_tables until
// its next report. pg_stat_force_next_flush() has it report at the end of this statement (before it answers). Not
// on PostgreSQL 14 and older, which report through the statistics collector, asynchronously: nothing to force.
const REPORT_PENDING_COUNTS_SQL = `DO $$BEGIN
  IF current_setting('server_version_num')::int >= 150000 THEN PERFORM pg_stat_force_next_flush(); END IF;
END$$`;

/** Has the session of `client` report its pending table counts (n_mod_since_analyze, …) as this statement ends. */
export async function reportPendingCounts(client: Queryable): Promise<void> {
  await client.query(REPORT_PENDING_COUNTS_SQL);
}

/**
 * @param tables qualified names (`straggler.bronze_events`, …)
 * @returns those of `tables` changed by more than 10 % (+1000 rows) since their last ANALYZE
 */
export async function readStaleTables(client: Queryable, tables: string[]): Promise<string[]> {
  const { rows } = await client.query(READ_STALE_TABLES_SQL, [tables]);
  return rows.map((r) => r.t as string);
}

/**
 * ANALYZEs `table`.
 * @param table a qualified name from the caller's fixed list, never from input (it is not a parameter)
 */
export async function analyzeTable(client: Queryable, table: string): Promise<void> {
  await client.query(`ANALYZE ${table}`);
}

/**
 * ANALYZEs only bronze's `pipeline` and `seq` columns: what the stream's and the
 * landing's plans need to know a pipeline's size (about a quarter of a full
 * ANALYZE's time). Inside a transaction it counts that transaction's own rows.
 */
export async function analyzePipelineColumns(client: Queryable): Promise<void> {
  await client.query(ANALYZE_PIPELINE_COLUMNS_SQL);
}

/** @returns the planner's estimate of `pipeline`'s rows in bronze (EXPLAIN, nothing is read) */
export async function estimatePipelineRows(client: Queryable, pipeline: string): Promise<number> {
  const plan = await client.query(ESTIMATE_PIPELINE_ROWS_SQL, [pipeline]);
  return Number(plan.rows[0]["QUERY PLAN"][0].Plan["Plan Rows"]);
}

/** @returns `pipeline`'s rows in bronze, counted up to `upTo` at most (an index scan of at most `upTo` entries) */
export async function countPipelineRows(client: Queryable, pipeline: string, upTo: number): Promise<number> {
  const { rows } = await client.query(COUNT_PIPELINE_ROWS_SQL, [pipeline, upTo]);
  return rows[0].n as number;
}

// As the stream's statements name a pipeline's live windows (src/db/sql/fragments/liveVersion.ts): the planner
// knows nothing of the version's value there (a parameter found at run time), only its column's distinct values.
const ESTIMATE_PIPELINE_WINDOWS_SQL = `EXPLAIN (FORMAT JSON) SELECT 1 FROM straggler.window_results_table
  WHERE pipeline = $1 AND version = ${liveVersion("$1")}`;
const COUNT_PIPELINE_WINDOWS_SQL =
  "SELECT count(*)::int AS n FROM (SELECT 1 FROM straggler.window_results_table WHERE pipeline = $1 LIMIT $2) s";
const ANALYZE_RESULTS_PIPELINE_SQL = "ANALYZE straggler.window_results_table (pipeline, version)";

/** @returns the planner's estimate of `pipeline`'s rows in the results table (EXPLAIN, nothing is read) */
export async function estimatePipelineWindows(client: Queryable, pipeline: string): Promise<number> {
  const plan = await client.query(ESTIMATE_PIPELINE_WINDOWS_SQL, [pipeline]);
  return Number(plan.rows[0]["QUERY PLAN"][0].Plan["Plan Rows"]);
}

/** @returns `pipeline`'s rows in the results table, counted up to `upTo` at most (an index scan of at most `upTo` entries) */
export async function countPipelineWindows(client: Queryable, pipeline: string, upTo: number): Promise<number> {
  const { rows } = await client.query(COUNT_PIPELINE_WINDOWS_SQL, [pipeline, upTo]);
  return rows[0].n as number;
}

/**
 * ANALYZEs only the results table's `pipeline` and `version` columns (and its size): what the MERGE's plan needs to
 * know a pipeline's live windows. Without the version's statistics the planner takes `version = $live` for one row
 * in 200 (its default equality selectivity): the taxi replay's MERGE then hashed all of its 10,000 windows a span.
 */
export async function analyzeResultsPipeline(client: Queryable): Promise<void> {
  await client.query(ANALYZE_RESULTS_PIPELINE_SQL);
}
