/**
 * The statements of a restore (src/retention/restore.ts): the archive's record, the partition made
 * again, the rows COPYed in through a scratch table (`restored_rows`, dropped at COMMIT: the file
 * names each row's source, bronze holds its id) and counted, and the archive marked restored.
 */
import type { Writable } from "node:stream";
import { from as copyFrom } from "pg-copy-streams";
import type { PoolClient, Queryable } from "../../pool.js";
import { quoteIdent } from "./archives.js";

/** An archive as `straggler.bronze_archives` records it: the data file's SHA-256 (hex), its rows, and when it was restored (null: not restored). */
export interface ArchiveRecordState {
  sha256: string;
  rows: number;
  restoredAt: string | null;
}

/** The record of the archive of `partition` for `pipeline`, or undefined when this database has none. */
export async function readArchiveRecord(
  db: Queryable,
  partition: string,
  pipeline: string,
): Promise<ArchiveRecordState | undefined> {
  const r = (
    await db.query(
      "SELECT sha256, rows, restored_at FROM straggler.bronze_archives WHERE partition = $1 AND pipeline = $2",
      [partition, pipeline],
    )
  ).rows[0];
  return r === undefined
    ? undefined
    : { sha256: r.sha256 as string, rows: Number(r.rows), restoredAt: r.restored_at as string | null };
}

/**
 * Makes bronze's partition `partition` for `landed_at` in [rangeStart, rangeEnd) (ISO 8601) when it does not exist,
 * moving the rows the DEFAULT partition holds for it (`straggler.ensure_bronze_partition`).
 * @returns whether it was made
 */
export async function ensurePartition(
  db: Queryable,
  partition: string,
  rangeStart: string,
  rangeEnd: string,
): Promise<boolean> {
  return (
    await db.query("SELECT straggler.ensure_bronze_partition($1, $2, $3) AS made", [partition, rangeStart, rangeEnd])
  ).rows[0].made as boolean;
}

/** How many rows of `pipeline` the partition `partition` holds. */
export async function countPartitionRows(db: Queryable, partition: string, pipeline: string): Promise<number> {
  return Number(
    (await db.query(`SELECT count(*) AS n FROM straggler.${quoteIdent(partition)} WHERE pipeline = $1`, [pipeline]))
      .rows[0].n,
  );
}

/**
 * Makes the scratch table `restored_rows` (bronze's columns, a source by its name, an archive's older
 * `policy_version` column) and opens a COPY into it of `columns`, in COPY text: write the archive's rows to it.
 */
export async function copyIntoRestoredRows(client: PoolClient, columns: readonly string[]): Promise<Writable> {
  await client.query("CREATE TEMPORARY TABLE restored_rows (LIKE straggler.bronze_events) ON COMMIT DROP");
  await client.query(
    "ALTER TABLE restored_rows ADD COLUMN source text, ADD COLUMN policy_version text, ALTER COLUMN source_id DROP NOT NULL",
  );
  return client.query(copyFrom(`COPY restored_rows (${columns.join(", ")}) FROM STDIN`));
}

/**
 * How many of `restored_rows` have a seq bronze holds already, of their pipeline (a restore must write none: bronze's
 * (pipeline, seq) index is not unique, drizzle/0050_bronze_narrow_keys.sql). One probe of that index a row.
 */
export async function countRestoredSeqsInBronze(db: Queryable): Promise<number> {
  return Number(
    (
      await db.query(
        // A scalar subquery with LIMIT stays one probe a row: as EXISTS, with restored_rows never analysed, the
        // planner took a hash semi join over every partition of bronze.
        "SELECT count(*) AS n FROM restored_rows r WHERE (SELECT 1 FROM straggler.bronze_events b WHERE b.pipeline = r.pipeline AND b.seq = r.seq LIMIT 1) IS NOT NULL",
      )
    ).rows[0].n,
  );
}

/**
 * Moves `restored_rows` into the partition `partition`: the sources they name are made in
 * `straggler.bronze_sources` where missing, and each row takes its source's id.
 * @param kept the columns of bronze the rows keep as they are (all of the archive's but `source`)
 */
export async function insertRestoredRows(client: Queryable, partition: string, kept: readonly string[]): Promise<void> {
  await client.query(
    "INSERT INTO straggler.bronze_sources (pipeline, name) SELECT DISTINCT pipeline, source FROM restored_rows ON CONFLICT (pipeline, name) DO NOTHING",
  );
  await client.query(
    `INSERT INTO straggler.${quoteIdent(partition)} (${kept.join(", ")}, source_id)
       SELECT ${kept.map((c) => `r.${c}`).join(", ")}, s.id FROM restored_rows r JOIN straggler.bronze_sources s ON s.pipeline = r.pipeline AND s.name = r.source`,
  );
}

/** Marks the archive of `partition` for `pipeline` restored (now). */
export async function markRestored(db: Queryable, partition: string, pipeline: string): Promise<void> {
  await db.query("UPDATE straggler.bronze_archives SET restored_at = now() WHERE partition = $1 AND pipeline = $2", [
    partition,
    pipeline,
  ]);
}
