/**
 * Landing files: one file, a landing folder, or stdin.
 */
import { randomUUID } from "node:crypto";
import { constants, createWriteStream } from "node:fs";
import { lstat, mkdtemp, open, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import type { Pool } from "../db/pool.js";
import { landRecords, type LandResult } from "./copyToBronze.js";
import { readRecords } from "./readers.js";

const EXTENSIONS: Record<PipelineConfig["source"]["format"], string[]> = {
  csv: [".csv"],
  jsonl: [".json", ".jsonl", ".ndjson"],
};

/**
 * Files in the landing folder that a landing pass considers, sorted by name.
 * Names starting with `.` or `_` are in-progress or private (write a file
 * under such a name, then rename it, so it is never read half-written).
 * Only plain files directly in the folder, with the format's extensions:
 * not folders, not symlinks (`Dirent.isFile()` is false for a symlink), so a
 * landing pass never reads outside its folder.
 */
export async function listLandingFiles(p: PipelineConfig): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(p.source.landingDir, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  return entries
    .filter((e) => e.isFile() && !/^[._]/.test(e.name) && EXTENSIONS[p.source.format].includes(path.extname(e.name).toLowerCase()))
    .map((e) => e.name)
    .sort();
}

/**
 * Lands one file. Its source key is `name` (relative to the landing folder
 * for landing-folder files), so the same file lands once.
 * @param landingTimeMs ingestion time for records without one (default: now)
 * @param noFollow refuse a symlink (landing-folder files: the folder's writer must not make the service read elsewhere)
 */
export async function landFile(
  pool: Pool,
  p: PipelineConfig,
  file: string,
  name: string,
  opts: { landingTimeMs?: number; onProgress?: (n: number) => void; noFollow?: boolean } = {},
): Promise<LandResult> {
  // A clear ENOENT before any transaction starts. With `noFollow` (landing-folder files) a
  // symlink is refused, also when one replaced the file after it was listed (O_NOFOLLOW).
  if (opts.noFollow && !(await lstat(file)).isFile()) throw new Error(`${file} is not a plain file`);
  if (!opts.noFollow) await stat(file);
  const flags = opts.noFollow ? constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) : "r";
  return landRecords(pool, p, name, fileRecords(file, flags, p.source.format), {
    landingTimeMs: opts.landingTimeMs ?? Date.now(),
    onProgress: opts.onProgress,
  });
}

/**
 * The records of `file`, opened only when read: a source that has landed
 * before is never read, and its file must not stay open (every landing pass
 * visits every file of the folder). Closed when reading ends or stops.
 */
async function* fileRecords(file: string, flags: string | number, format: PipelineConfig["source"]["format"]): AsyncGenerator<RawRecord> {
  const stream = (await open(file, flags)).createReadStream(); // autoClose: destroying it closes the file
  try {
    yield* readRecords(stream, format);
  } finally {
    stream.destroy();
  }
}

/** Lands every file of the pipeline's landing folder that has not landed yet, in name order. */
export async function landPendingFiles(pool: Pool, p: PipelineConfig, onLanded?: (r: LandResult) => void): Promise<LandResult[]> {
  const results: LandResult[] = [];
  for (const name of await listLandingFiles(p)) {
    const r = await landFile(pool, p, path.join(p.source.landingDir, name), name, { noFollow: true });
    if (!r.alreadyLanded) onLanded?.(r);
    results.push(r);
  }
  return results;
}

/**
 * Lands a stream with no stable name (stdin) under the source key
 * `<kind>:<uuid>`; made-up event ids are `<kind>:<uuid>:<line>`.
 *
 * The stream is first spooled to a temporary file (removed afterwards):
 * landing holds the pipeline's append lock while it reads, and a producer
 * that pauses (`tail -f | straggler ingest -`) must not hold up every other
 * landing of the pipeline meanwhile.
 * @throws the stream's read error or a database error; nothing is landed then
 */
export async function landStream(pool: Pool, p: PipelineConfig, input: Readable, kind: string, landingTimeMs = Date.now()): Promise<LandResult> {
  const dir = await mkdtemp(path.join(tmpdir(), "straggler-spool-"));
  try {
    const file = path.join(dir, "input");
    await pipe(input, createWriteStream(file, { mode: 0o600 }));
    return await landRecords(pool, p, `${kind}:${randomUUID()}`, fileRecords(file, "r", p.source.format), { landingTimeMs });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
