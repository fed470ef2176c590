/**
 * The archive step (`straggler archive`, and the service's hourly tick when a
 * pipeline has `retention`): bronze partitions wholly past the correction
 * horizon are written to compressed files and dropped.
 *
 * A partition is shared by every pipeline that landed in its month. It is
 * archived only when, for every pipeline with rows in it:
 *   - the pipeline has a `retention` setting (a pipeline without one keeps its rows);
 *   - the stream has read all its rows there (checkpoint `last_offset` >= their greatest seq);
 *   - all its rows there have event times more than `correctionHorizon` behind its
 *     watermark (rows without an event time never enter a window);
 *   - no rebuild of it is running;
 * and the partition is closed (its month has ended, so nothing lands in it any more).
 *
 * Each pipeline's rows go to its own `retention.archive` folder as
 * `<partition>.<pipeline>.copy.gz` (PostgreSQL COPY text, the columns named in
 * the manifest, in seq order, gzip) beside `<partition>.<pipeline>.manifest.json`
 * (bounds, rows by status and reason, event-time and seq range, SHA-256 of the
 * .gz file). In one transaction holding the partition against writes: the files
 * are written, the counts recorded in `straggler.bronze_archives` and
 * `straggler.bronze_archived_counts` (so the ledger keeps counting the rows),
 * then the partition is detached and dropped. A crash before COMMIT leaves bronze
 * as it was (files written again on the next run).
 *
 * Which partitions are archivable, and why not, is src/retention/archivePlan.ts's.
 */
import { ARCHIVE_COLUMNS, archiveCopySql } from "../db/sql/retention/archiveRows.js";
import { createHash } from "node:crypto";
import { createWriteStream, mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { to as copyTo } from "pg-copy-streams";
import { formatDuration } from "../config/duration.js";
import type { PipelineConfig } from "../config/pipelines.js";
import type { PipelineInPartition } from "../core/model.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import {
  dropPartition,
  limitLockWait,
  lockPartition,
  lockRetention,
  partitionExists,
  quoteIdent,
  quoteLiteral,
  readArchivedCounts,
  readSeqRange,
  readStreamPositions,
  recordArchive,
  type ArchivedCount,
} from "../db/sql/retention/archives.js";
import { planArchive, type PartitionVerdict } from "./archivePlan.js";

/** The archive file format, as the manifest names it. */
const ARCHIVE_FORMAT =
  "straggler-bronze-archive/1: PostgreSQL COPY text of the listed columns, rows in seq order, gzip";

export { ARCHIVE_COLUMNS };

/** An archive's manifest (`<partition>.<pipeline>.manifest.json`). Instants ISO 8601 UTC. */
export interface ArchiveManifest {
  format: string;
  partition: string;
  pipeline: string;
  /** The partition's landed_at bounds [rangeStart, rangeEnd). */
  rangeStart: string;
  rangeEnd: string;
  columns: string[];
  rows: number;
  /** Rows by status (`accepted`, `quarantined`). */
  byStatus: Record<string, number>;
  /** Quarantined rows by reason. */
  byReason: Record<string, number>;
  /** Least and greatest event time of the rows (null when none has one). */
  eventTime: { min: string | null; max: string | null };
  seq: { min: number | null; max: number | null };
  /** The data file's name (in the manifest's folder), its size in bytes and SHA-256 (hex). */
  file: string;
  bytes: number;
  sha256: string;
  /** The pipeline's horizon and watermark when it was archived. */
  correctionHorizon: string;
  watermark: string;
  archivedAt: string;
}

/** An archive written: where, and what it holds. */
interface WrittenArchive {
  manifestFile: string;
  manifest: ArchiveManifest;
}

/** SHA-256 (hex) and byte count of what passes through. */
function hashing(): { stream: Transform; digest: () => { sha256: string; bytes: number } } {
  const h = createHash("sha256");
  let bytes = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      h.update(chunk);
      bytes += chunk.length;
      cb(null, chunk);
    },
  });
  return { stream, digest: () => ({ sha256: h.digest("hex"), bytes }) };
}

/** The file names of the archive of `partition` for `pipeline`. */
function archiveFiles(folder: string, partition: string, pipeline: string): { data: string; manifest: string } {
  const base = path.join(folder, `${partition}.${pipeline}`);
  return { data: `${base}.copy.gz`, manifest: `${base}.manifest.json` };
}

/** Writes one pipeline's rows of `partition` (COPY → gzip → file, hashed) and its manifest, on `client` in the archiving transaction. */
async function writeArchive(
  client: PoolClient,
  verdict: PartitionVerdict,
  p: PipelineInPartition,
  config: PipelineConfig,
  watermark: string,
): Promise<WrittenArchive & { counts: ArchivedCount[] }> {
  const folder = config.retention!.archive;
  mkdirSync(folder, { recursive: true });
  const files = archiveFiles(folder, verdict.partition, p.pipeline);
  const tmpData = `${files.data}.tmp`;
  // The raw text as received, also for rows bronze keeps without it (an archive file stands on its own).
  const copySql = archiveCopySql(quoteIdent(verdict.partition), quoteLiteral(p.pipeline));
  const hash = hashing();
  await pipe(client.query(copyTo(copySql)), createGzip(), hash.stream, createWriteStream(tmpData));
  const { sha256, bytes } = hash.digest();
  renameSync(tmpData, files.data);
  const counts = await readArchivedCounts(client, verdict.partition, p.pipeline);
  const byStatus: Record<string, number> = {},
    byReason: Record<string, number> = {};
  for (const c of counts) {
    byStatus[c.status] = (byStatus[c.status] ?? 0) + c.rows;
    if (c.reason !== "") byReason[c.reason] = (byReason[c.reason] ?? 0) + c.rows;
  }
  const seqRange = await readSeqRange(client, verdict.partition, p.pipeline);
  const manifest: ArchiveManifest = {
    format: ARCHIVE_FORMAT,
    partition: verdict.partition,
    pipeline: p.pipeline,
    rangeStart: verdict.rangeStart,
    rangeEnd: verdict.rangeEnd,
    columns: [...ARCHIVE_COLUMNS],
    rows: p.rows,
    byStatus,
    byReason,
    eventTime: { min: p.minEventTime, max: p.maxEventTime },
    seq: seqRange,
    file: path.basename(files.data),
    bytes,
    sha256,
    correctionHorizon: formatDuration(config.retention!.correctionHorizon),
    watermark,
    archivedAt: new Date().toISOString(),
  };
  writeFileSync(`${files.manifest}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(`${files.manifest}.tmp`, files.manifest);
  return { manifestFile: files.manifest, manifest, counts };
}

/**
 * Archives `verdict`'s partition (which must be archivable) and drops it, in one transaction.
 * @returns the archives written, one per pipeline with rows in it; null when another run (another replica's) archived it meanwhile
 * @throws Error when the partition changed meanwhile (rows or verdict); the database's error
 *   (a lock timeout after 10 s while a long read holds bronze: nothing is dropped, the next run tries again)
 */
async function archivePartition(
  pool: Pool,
  pipelines: PipelineConfig[],
  verdict: PartitionVerdict,
  now = Date.now(),
): Promise<WrittenArchive[] | null> {
  const byName = new Map(pipelines.map((p) => [p.name, p]));
  return withTransaction<WrittenArchive[] | null>(pool, async (client) => {
    // One archive or restore at a time; the partition's rows cannot change while it is written.
    await lockRetention(client);
    // Archived meanwhile by another replica's run: nothing left to do.
    if (!(await partitionExists(client, verdict.partition))) return null;
    await lockPartition(client, verdict.partition);
    const [again] = await planArchive(client, pipelines, now).then((vs) =>
      vs.filter((v) => v.partition === verdict.partition),
    );
    if (!again || !again.archivable)
      throw new Error(`${verdict.partition}: no longer archivable: ${again?.reasons.join("; ") ?? "gone"}`);
    const positions = await readStreamPositions(
      client,
      again.pipelines.map((p) => p.pipeline),
    );
    const written: WrittenArchive[] = [];
    for (const p of again.pipelines) {
      const w = await writeArchive(client, again, p, byName.get(p.pipeline)!, positions.get(p.pipeline)!.watermark!);
      await recordArchive(
        client,
        {
          partition: again.partition,
          pipeline: p.pipeline,
          rangeStart: again.rangeStart,
          rangeEnd: again.rangeEnd,
          file: w.manifestFile,
          sha256: w.manifest.sha256,
          rows: p.rows,
          manifest: w.manifest,
        },
        w.counts,
      );
      written.push({ manifestFile: w.manifestFile, manifest: w.manifest });
    }
    // DETACH and DROP take an ACCESS EXCLUSIVE lock on bronze for a moment: wait 10 s at most.
    await limitLockWait(client);
    await dropPartition(client, again.partition);
    return written;
  });
}

/** What one archive run did: the partitions archived (with their files) and those kept, with why. */
export interface ArchiveRun {
  archived: { partition: string; rows: number; archives: WrittenArchive[] }[];
  kept: PartitionVerdict[];
}

/**
 * Archives every archivable partition, oldest first.
 * @param opts.includeRestored also archive again partitions restored earlier (`straggler archive` does; the service does not)
 * @throws as archivePartition
 */
export async function runArchive(
  pool: Pool,
  pipelines: PipelineConfig[],
  opts: { includeRestored: boolean; now?: number },
): Promise<ArchiveRun> {
  const verdicts = await planArchive(pool, pipelines, opts.now);
  const run: ArchiveRun = { archived: [], kept: [] };
  for (const v of verdicts) {
    if (!v.archivable || (v.restored && !opts.includeRestored)) {
      run.kept.push(
        v.archivable ? { ...v, reasons: ["restored from its archives: `straggler archive` archives it again"] } : v,
      );
      continue;
    }
    const archives = await archivePartition(pool, pipelines, v, opts.now);
    if (archives === null) continue; // archived meanwhile by another replica
    run.archived.push({ partition: v.partition, rows: v.rows, archives });
  }
  return run;
}
