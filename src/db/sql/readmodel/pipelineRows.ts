/**
 * Every row a pipeline owns, across the schema: the base tables of schema
 * `straggler` with a `pipeline` column (bronze, landed sources, source files,
 * checkpoints, batch progress, results, late events and windows, correction
 * runs and their audit, failed windows, alert states, policy versions — and
 * whatever table keyed by pipeline a later migration adds). For `straggler drop`.
 * Bronze's partitions are left out: their rows are bronze_events' own.
 */
import { LockNamespace, XACT_LOCK_SQL } from "../../locks.js";
import type { Queryable } from "../../pool.js";

const PIPELINE_TABLES_SQL = `SELECT c.table_name
  FROM information_schema.columns c
  JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
 WHERE c.table_schema = 'straggler' AND c.column_name = 'pipeline' AND t.table_type = 'BASE TABLE'
   AND NOT (SELECT relispartition FROM pg_class WHERE oid = format('straggler.%I', c.table_name)::regclass)
 ORDER BY c.table_name`;

/** The tables of schema `straggler` keyed by pipeline (names without the schema), sorted. */
export async function pipelineTables(client: Queryable): Promise<string[]> {
  return (await client.query(PIPELINE_TABLES_SQL)).rows.map((r: { table_name: string }) => r.table_name);
}

const quoted = (table: string) => `straggler."${table.replaceAll('"', '""')}"`;

/** Rows of `pipeline` in each of `tables`: `{ table: rows }`, every table listed (0 included). */
export async function countPipelineRows(
  client: Queryable,
  pipeline: string,
  tables: string[],
): Promise<Record<string, number>> {
  if (tables.length === 0) return {};
  const sql = tables
    .map((t, i) => `SELECT ${i} AS i, count(*)::bigint AS n FROM ${quoted(t)} WHERE pipeline = $1`)
    .join(" UNION ALL ");
  const counts: Record<string, number> = Object.fromEntries(tables.map((t) => [t, 0]));
  for (const r of (await client.query(sql, [pipeline])).rows as { i: number; n: number }[]) counts[tables[r.i]!] = r.n;
  return counts;
}

/** Deletes every row of `pipeline` from each of `tables`; returns the rows deleted per table. */
export async function deletePipelineRows(
  client: Queryable,
  pipeline: string,
  tables: string[],
): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const t of tables)
    deleted[t] = (await client.query(`DELETE FROM ${quoted(t)} WHERE pipeline = $1`, [pipeline])).rowCount ?? 0;
  return deleted;
}

/** Takes `pipeline`'s bronze-append lock, waiting for it, until `client`'s transaction ends (landings only ever try it). */
export async function lockBronzeAppend(client: Queryable, pipeline: string): Promise<void> {
  await client.query(XACT_LOCK_SQL, [LockNamespace.bronzeAppend, pipeline]);
}
