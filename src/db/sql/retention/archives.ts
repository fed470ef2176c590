/**
 * The statements of the archive step (src/retention/archive.ts): what a closed partition holds per
 * pipeline, the stream's position and running rebuilds of those pipelines, the archives' records
 * (`straggler.bronze_archives`, `straggler.bronze_archived_counts`), and the partition's lock,
 * detach and drop. A partition is named by its table name, quoted here as an identifier.
 */
import { LockNamespace } from "../../locks.js";
import type { Queryable } from "../../pool.js";
import type { PipelineInPartition } from "../../../core/model.js";

/** `"name"` quoted as an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `'text'` quoted as an SQL literal. */
export function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Takes the retention lock (one archive or restore at a time), held until the transaction ends. */
export async function lockRetention(client: Queryable): Promise<void> {
  await client.query("SELECT pg_advisory_xact_lock($1::int, 0)", [LockNamespace.retention]);
}

/** Lets this transaction wait 10 s at most for a lock (`SET LOCAL lock_timeout`): a DETACH, DROP or partition made waits no longer behind a long read. */
export async function limitLockWait(client: Queryable): Promise<void> {
  await client.query("SET LOCAL lock_timeout = '10s'");
}

/** The partitions restored from their archives (`restored_at` set). */
export async function readRestoredPartitions(db: Queryable): Promise<Set<string>> {
  return new Set(
    (await db.query("SELECT DISTINCT partition FROM straggler.bronze_archives WHERE restored_at IS NOT NULL")).rows.map(
      (r) => r.partition as string,
    ),
  );
}

/** Each pipeline's rows in `partition` (count, greatest seq, event-time range; instants ISO 8601 UTC), by pipeline. */
export async function readPipelinesInPartition(db: Queryable, partition: string): Promise<PipelineInPartition[]> {
  const { rows } =
    await db.query(`SELECT pipeline, count(*)::bigint AS rows, max(seq) AS max_seq, min(event_time) AS min_et, max(event_time) AS max_et
  FROM straggler.${quoteIdent(partition)} GROUP BY pipeline ORDER BY pipeline`);
  return rows.map((r) => ({
    pipeline: r.pipeline as string,
    rows: Number(r.rows),
    maxSeq: Number(r.max_seq),
    minEventTime: r.min_et as string | null,
    maxEventTime: r.max_et as string | null,
  }));
}

/** The stream's position of each of `pipelines` that has a checkpoint: its last seq read and its watermark (ISO 8601 UTC, null before any). */
export async function readStreamPositions(
  db: Queryable,
  pipelines: string[],
): Promise<Map<string, { lastSeq: number; watermark: string | null }>> {
  const { rows } = await db.query(
    "SELECT pipeline, last_offset, watermark FROM straggler.checkpoints WHERE pipeline = ANY($1)",
    [pipelines],
  );
  return new Map(
    rows.map((r) => [
      r.pipeline as string,
      { lastSeq: Number(r.last_offset), watermark: r.watermark as string | null },
    ]),
  );
}

/** Those of `pipelines` with a rebuild running. */
export async function readRebuildingPipelines(db: Queryable, pipelines: string[]): Promise<Set<string>> {
  return new Set(
    (
      await db.query(
        "SELECT DISTINCT pipeline FROM straggler.rebuilds WHERE status = 'running' AND pipeline = ANY($1)",
        [pipelines],
      )
    ).rows.map((r) => r.pipeline as string),
  );
}

/** One pipeline's rows of a partition by status and reason (`""`: none), with their event-time range (ISO 8601 UTC, null when none has one). */
export interface ArchivedCount {
  status: string;
  reason: string;
  rows: number;
  minEt: string | null;
  maxEt: string | null;
}

/** `pipeline`'s rows of `partition` counted by status and reason, in that order. */
export async function readArchivedCounts(db: Queryable, partition: string, pipeline: string): Promise<ArchivedCount[]> {
  const { rows } = await db.query(
    `SELECT status, coalesce(reason, '') AS reason, count(*)::bigint AS rows, min(event_time) AS min_et, max(event_time) AS max_et
  FROM straggler.${quoteIdent(partition)} WHERE pipeline = $1 GROUP BY status, coalesce(reason, '') ORDER BY 1, 2`,
    [pipeline],
  );
  return rows.map((r) => ({
    status: r.status as string,
    reason: r.reason as string,
    rows: Number(r.rows),
    minEt: r.min_et as string | null,
    maxEt: r.max_et as string | null,
  }));
}

/** The least and greatest seq of `pipeline`'s rows in `partition` (null when it has none). */
export async function readSeqRange(
  db: Queryable,
  partition: string,
  pipeline: string,
): Promise<{ min: number | null; max: number | null }> {
  const r = (
    await db.query(
      `SELECT min(seq) AS lo, max(seq) AS hi FROM straggler.${quoteIdent(partition)} WHERE pipeline = $1`,
      [pipeline],
    )
  ).rows[0];
  return { min: r.lo === null ? null : Number(r.lo), max: r.hi === null ? null : Number(r.hi) };
}

/** Whether `partition` is a table of bronze still (another run may have archived and dropped it). */
export async function partitionExists(db: Queryable, partition: string): Promise<boolean> {
  return (await db.query("SELECT to_regclass($1) AS t", [`straggler.${quoteIdent(partition)}`])).rows[0].t !== null;
}

/** Holds `partition` against writes (`SHARE` lock) until the transaction ends. */
export async function lockPartition(client: Queryable, partition: string): Promise<void> {
  await client.query(`LOCK TABLE straggler.${quoteIdent(partition)} IN SHARE MODE`);
}

/** An archive written, as `straggler.bronze_archives` records it: the partition's bounds (ISO 8601), the manifest's file, its SHA-256 (hex), rows, and the manifest itself. */
export interface ArchiveRecord {
  partition: string;
  pipeline: string;
  rangeStart: string;
  rangeEnd: string;
  file: string;
  sha256: string;
  rows: number;
  manifest: unknown;
}

/** Records an archive (again: it replaces the record of an earlier archive of the same partition and pipeline, no longer restored) and its counts, replacing those recorded before. */
export async function recordArchive(client: Queryable, a: ArchiveRecord, counts: ArchivedCount[]): Promise<void> {
  await client.query(
    `INSERT INTO straggler.bronze_archives (partition, pipeline, range_start, range_end, file, sha256, rows, manifest)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (partition, pipeline) DO UPDATE SET range_start = EXCLUDED.range_start, range_end = EXCLUDED.range_end, file = EXCLUDED.file,
  sha256 = EXCLUDED.sha256, rows = EXCLUDED.rows, manifest = EXCLUDED.manifest, archived_at = now(), restored_at = NULL`,
    [a.partition, a.pipeline, a.rangeStart, a.rangeEnd, a.file, a.sha256, a.rows, a.manifest],
  );
  await client.query("DELETE FROM straggler.bronze_archived_counts WHERE partition = $1 AND pipeline = $2", [
    a.partition,
    a.pipeline,
  ]);
  for (const c of counts) {
    await client.query(
      `INSERT INTO straggler.bronze_archived_counts (partition, pipeline, status, reason, rows, min_event_time, max_event_time)
VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [a.partition, a.pipeline, c.status, c.reason, c.rows, c.minEt, c.maxEt],
    );
  }
}

/** Detaches `partition` from bronze and drops it (each takes an ACCESS EXCLUSIVE lock on bronze for a moment: see `limitLockWait`). */
export async function dropPartition(client: Queryable, partition: string): Promise<void> {
  await client.query(`ALTER TABLE straggler.bronze_events DETACH PARTITION straggler.${quoteIdent(partition)}`);
  await client.query(`DROP TABLE straggler.${quoteIdent(partition)}`);
}
