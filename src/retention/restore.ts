/**
 * `straggler restore --archive <file>`: puts an archive's rows back in bronze
 * for a one-off recompute (README "Retention and archives").
 *
 * The data file's SHA-256 is checked against its manifest (and the manifest
 * against the archive's record in `straggler.bronze_archives`) before anything
 * is written. The partition is made again with its bounds (moving any rows
 * the DEFAULT partition holds for them), the rows are COPYed into it with
 * their seq values, and the archive is marked restored: the ledger then
 * counts the rows in bronze instead of in the archive, and the horizon guard
 * lets windows of its event times be recomputed. `straggler archive` archives
 * the partition again (the service's schedule leaves a restored partition alone).
 */
import { createHash } from "node:crypto";
import { createReadStream, readFileSync } from "node:fs";
import path from "node:path";
import { pipeline as pipe } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { withTransaction, type Pool } from "../db/pool.js";
import { limitLockWait, lockRetention } from "../db/sql/retention/archives.js";
import {
  copyIntoRestoredRows,
  countPartitionRows,
  countRestoredSeqsInBronze,
  ensurePartition,
  insertRestoredRows,
  markRestored,
  readArchiveRecord,
} from "../db/sql/retention/restoreRows.js";
import { ARCHIVE_COLUMNS, type ArchiveManifest } from "./archive.js";

/**
 * The columns of an archive written before bronze's rows lost `policy_version` (drizzle/0037_classification_deltas.sql):
 * a restore still reads them, leaving that column out.
 */
const LEGACY_ARCHIVE_COLUMNS = [
  "seq",
  "pipeline",
  "event_id",
  "raw",
  "event_time",
  "ingestion_time",
  "group_key",
  "value",
  "status",
  "reason",
  "detail",
  "policy_version",
  "source",
  "source_line",
  "landed_at",
  "input",
] as const;

/** An archive that cannot be restored: its file is damaged or not the one recorded, or it is restored already. Nothing was written. */
export class RestoreRefusedError extends Error {
  override name = "RestoreRefusedError";
}

/** What a restore did. */
export interface RestoreResult {
  partition: string;
  pipeline: string;
  rows: number;
  sha256: string;
  /** The partition was made again (false: it existed, e.g. another pipeline's archive of it was restored first). */
  partitionMade: boolean;
}

/** The manifest of `file`: a manifest itself, or the data file beside it. */
function readManifest(file: string): { manifest: ArchiveManifest; manifestFile: string; dataFile: string } {
  const manifestFile = file.endsWith(".copy.gz") ? file.slice(0, -".copy.gz".length) + ".manifest.json" : file;
  let manifest: ArchiveManifest;
  try {
    manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as ArchiveManifest;
  } catch (e) {
    throw new RestoreRefusedError(`cannot read the archive manifest ${manifestFile}: ${(e as Error).message}`);
  }
  if (
    typeof manifest.partition !== "string" ||
    typeof manifest.file !== "string" ||
    typeof manifest.sha256 !== "string" ||
    !Array.isArray(manifest.columns)
  ) {
    throw new RestoreRefusedError(
      `${manifestFile} is not an archive manifest (expected partition, file, sha256 and columns)`,
    );
  }
  return { manifest, manifestFile, dataFile: path.join(path.dirname(manifestFile), manifest.file) };
}

/** SHA-256 (hex) of a file's bytes. */
async function sha256Of(file: string): Promise<string> {
  const h = createHash("sha256");
  try {
    for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  } catch (e) {
    throw new RestoreRefusedError(`cannot read the archive file ${file}: ${(e as Error).message}`);
  }
  return h.digest("hex");
}

/**
 * Restores the archive named by `file` (its manifest, or its `.copy.gz` beside the manifest).
 * @throws RestoreRefusedError when the checksum does not match, the archive is not recorded in
 *   this database, it is restored already, any of its seqs is in bronze already, or the file's rows are not the
 *   manifest's count; the database's error
 */
export async function restoreArchive(pool: Pool, file: string): Promise<RestoreResult> {
  const { manifest, dataFile } = readManifest(file);
  const actual = await sha256Of(dataFile);
  if (actual !== manifest.sha256) {
    throw new RestoreRefusedError(
      `${dataFile}: SHA-256 ${actual} does not match the manifest's ${manifest.sha256}: the file is damaged or not this archive's; nothing was restored`,
    );
  }
  const legacy = manifest.columns.join(",") === LEGACY_ARCHIVE_COLUMNS.join(",");
  if (!legacy && manifest.columns.join(",") !== ARCHIVE_COLUMNS.join(",")) {
    throw new RestoreRefusedError(
      `${dataFile}: its columns (${manifest.columns.join(", ")}) are not bronze's (${ARCHIVE_COLUMNS.join(", ")}); nothing was restored`,
    );
  }
  return withTransaction(pool, async (client) => {
    await lockRetention(client);
    const rec = await readArchiveRecord(client, manifest.partition, manifest.pipeline);
    if (!rec)
      throw new RestoreRefusedError(
        `${manifest.partition} of ${manifest.pipeline}: no such archive in this database (straggler.bronze_archives); nothing was restored`,
      );
    if (rec.sha256 !== manifest.sha256) {
      throw new RestoreRefusedError(
        `${dataFile}: SHA-256 ${manifest.sha256} is not the one recorded when ${manifest.partition} of ${manifest.pipeline} was archived (${rec.sha256}); nothing was restored`,
      );
    }
    if (rec.restoredAt !== null)
      throw new RestoreRefusedError(
        `${manifest.partition} of ${manifest.pipeline}: restored already (at ${rec.restoredAt}); \`straggler archive\` archives it again`,
      );
    await limitLockWait(client);
    const made = await ensurePartition(client, manifest.partition, manifest.rangeStart, manifest.rangeEnd);
    const before = await countPartitionRows(client, manifest.partition, manifest.pipeline);
    // Through a scratch table: the file names each row's source (bronze holds its id: straggler.bronze_sources,
    // made where missing), and an archive from before 0037 holds a policy_version column, left out.
    const columns = legacy ? LEGACY_ARCHIVE_COLUMNS : ARCHIVE_COLUMNS;
    const into = await copyIntoRestoredRows(client, columns);
    await pipe(createReadStream(dataFile), createGunzip(), into);
    const present = await countRestoredSeqsInBronze(client);
    if (present > 0) {
      throw new RestoreRefusedError(
        `${dataFile}: ${present} of its rows have a seq that ${manifest.pipeline}'s bronze holds already; nothing was restored`,
      );
    }
    await insertRestoredRows(
      client,
      manifest.partition,
      ARCHIVE_COLUMNS.filter((c) => c !== "source"),
    );
    const after = await countPartitionRows(client, manifest.partition, manifest.pipeline);
    if (after - before !== Number(rec.rows)) {
      throw new RestoreRefusedError(
        `${dataFile}: ${after - before} rows read, the archive recorded ${rec.rows}; nothing was restored`,
      );
    }
    await markRestored(client, manifest.partition, manifest.pipeline);
    return {
      partition: manifest.partition,
      pipeline: manifest.pipeline,
      rows: after - before,
      sha256: actual,
      partitionMade: made,
    };
  });
}
