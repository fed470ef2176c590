/**
 * Landing files: one named file, an opened landing-folder file (or the new
 * piece of an append-only one), or stdin.
 */
import { createHash, randomUUID } from "node:crypto";
import { constants, createWriteStream, type Stats } from "node:fs";
import { lstat, mkdtemp, open, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import type { Pool, PoolClient } from "../db/pool.js";
import { landRecords } from "./copyToBronze.js";
import type { LandResult } from "./landAnswer.js";
import type { CsvColumns } from "./csvRecords.js";
import { SourceNameTaken, SourceRefused } from "./errors.js";
import { spoolPrefix } from "./spoolFolders.js";
import { readOptionsFor, readRecords } from "./readers.js";
import { markSourceFile, recordFileLanding, type SourceFileRecord } from "./sourceFiles.js";
import { readSourceFile } from "../db/sql/ingest/readSourceFiles.js";

/** What kind of thing `st` is, for a refusal message. */
export function fileKind(st: Stats): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isDirectory()) return "a directory";
  if (st.isSymbolicLink()) return "a symbolic link";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "not a regular file";
}

/**
 * Opens a file to land it and checks what was opened.
 * With `landingFolder`, the open never blocks and never follows a symlink
 * (O_NONBLOCK | O_NOFOLLOW), and the opened descriptor must be a regular
 * file: whatever replaced the listed file meanwhile (FIFO, socket, device,
 * directory, symlink) is refused, not read.
 * @returns the open handle and its fstat; null when the file no longer exists (landing folder only)
 * @throws SourceRefused when it cannot be opened or is not a regular file
 */
export async function openSourceFile(
  file: string,
  landingFolder: boolean,
): Promise<{ fh: FileHandle; st: Stats } | null> {
  const flags = landingFolder
    ? constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0)
    : constants.O_RDONLY;
  let fh: FileHandle;
  try {
    fh = await open(file, flags);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && landingFolder) return null;
    if (code === "ELOOP") throw new SourceRefused("not a regular file: a symbolic link");
    if (code === "ENXIO") throw new SourceRefused("not a regular file: a socket");
    throw new SourceRefused(`cannot open: ${(e as Error).message}`, { cause: e });
  }
  const st = await fh.stat();
  if (!st.isFile() && landingFolder) {
    await fh.close();
    throw new SourceRefused(`not a regular file: ${fileKind(st)}`);
  }
  return { fh, st };
}

const CHUNK_BYTES = 64 * 1024;

/**
 * The bytes of `fh` from `start` to its end, in fresh 64 KiB chunks (read at
 * explicit positions: several readers may share the handle). A read error
 * becomes SourceRefused (the file's fault, not the database's). The handle
 * stays open.
 */
export async function* fileChunks(fh: FileHandle, start: number): AsyncGenerator<Buffer> {
  let position = start;
  for (;;) {
    const buf = Buffer.allocUnsafe(CHUNK_BYTES);
    let n: number;
    try {
      n = (await fh.read(buf, 0, CHUNK_BYTES, position)).bytesRead;
    } catch (e) {
      throw new SourceRefused(`cannot read: ${(e as Error).message}`, { cause: e });
    }
    if (n === 0) return;
    position += n;
    yield n === CHUNK_BYTES ? buf : buf.subarray(0, n);
  }
}

/** The CSV header of an open file (read from its start), for the later pieces of an append-only file. */
async function readCsvHeader(
  fh: FileHandle,
  pipeline: PipelineConfig,
): Promise<{ columns: CsvColumns; text: string } | undefined> {
  let header: { columns: CsvColumns; text: string } | undefined;
  for await (const _ of readRecords(fileChunks(fh, 0), "csv", {
    ...readOptionsFor(pipeline),
    unterminated: "hold",
    onHeader: (columns, text) => (header = { columns, text }),
  }))
    break;
  return header;
}

/** SHA-256 and line count of all of `fh`'s bytes (line ends as the readers count them: LF, CRLF, a lone CR). */
export async function hashFile(fh: FileHandle): Promise<{ sha256: string; lines: number; bytes: number }> {
  const h = createHash("sha256");
  let lines = 0,
    bytes = 0,
    lastCr = false;
  for await (const chunk of fileChunks(fh, 0)) {
    h.update(chunk);
    bytes += chunk.length;
    for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1))
      if (!(i === 0 ? lastCr : chunk[i - 1] === 0x0d)) lines++;
    for (let i = chunk.indexOf(0x0d); i !== -1; i = chunk.indexOf(0x0d, i + 1)) lines++; // a CR ends a line, alone or before its LF
    lastCr = chunk[chunk.length - 1] === 0x0d;
  }
  return { sha256: h.digest("hex"), lines, bytes };
}

export interface LandOpenOptions {
  landingTimeMs?: number;
  /** Called as records land: how many so far, and how many of the file's bytes they span (from its start). */
  onProgress?: (records: number, bytes: number) => void;
  /** The file's record when an append-only file lands its next piece: reading starts at its landed bytes. */
  continueFrom?: SourceFileRecord;
  /** The input its rows come from (docs/DESIGN.md "Several inputs"); `default` when unset. */
  input?: string;
  /** The last statement of the landing's transaction (a replica's lease fence, src/cluster/fencing.ts): a throw rolls the landing back. */
  fence?: (client: PoolClient) => Promise<void>;
}

/**
 * Lands an open file (from its start, or the next piece of an append-only
 * file) and records it in `source_files` in the same transaction. The source
 * key is `name`, or `name@<offset>` for a later piece; made-up event ids are
 * `name:<line>` either way. In append-only mode a final line without its
 * newline waits for it; otherwise it is a record.
 * @throws SourceRefused (bad header, read error: nothing landed), or a database error
 */
export async function landOpenFile(
  pool: Pool,
  pipeline: PipelineConfig,
  fh: FileHandle,
  st: Stats,
  name: string,
  opts: LandOpenOptions = {},
): Promise<LandResult> {
  const from = opts.continueFrom;
  const offset = from?.landedBytes ?? 0;
  const header = pipeline.source.format === "csv" && offset > 0 ? await readCsvHeader(fh, pipeline) : undefined;
  let headerText = header?.text;
  const hash = offset === 0 ? createHash("sha256") : undefined;
  const position = { offset, line: from?.landedLines ?? 0 };
  const source = offset === 0 ? name : `${name}@${offset}`;
  async function* records(): AsyncGenerator<RawRecord> {
    const input = readRecords(fileChunks(fh, offset), pipeline.source.format, {
      ...readOptionsFor(pipeline),
      unterminated: pipeline.source.appendOnly ? "hold" : "record",
      header: header?.columns,
      onHeader: (_, text) => (headerText = text),
      startOffset: offset,
      firstLine: position.line + 1,
      position,
      onChunk: hash ? (c) => hash.update(c) : undefined,
    });
    for await (const rec of input) yield offset === 0 ? rec : { ...rec, origin: name };
  }
  return landRecords(pool, pipeline, source, records(), {
    landingTimeMs: opts.landingTimeMs ?? Date.now(),
    onProgress: opts.onProgress && ((n) => opts.onProgress!(n, position.offset)),
    ...(opts.input === undefined ? {} : { input: opts.input }),
    csvHeader: () => headerText,
    beforeCommit: async (client, result) => {
      await recordFileLanding(
        client,
        pipeline,
        name,
        {
          sizeBytes: st.size,
          mtimeMs: st.mtimeMs,
          sha256: hash?.digest("hex") ?? null,
          landedBytes: position.offset,
          landedLines: position.line,
        },
        result,
      );
      await opts.fence?.(client);
    },
  });
}

/**
 * Lands one named file (`straggler ingest -p P file…`, tests, the benchmark)
 * under the source key `name`, so the same file lands once: given again with
 * the same bytes it is answered `alreadyLanded`; a different file under a name
 * that has landed (`day2/r.csv` after `day1/r.csv`, both `r.csv`) is refused
 * (`SourceNameTaken`), nothing landed or recorded. No settle period: naming a
 * file says it is complete.
 * @param landingTimeMs ingestion time for records without one (default: now)
 * @param noFollow open as a landing-folder file: no symlink, only a regular file
 * @throws SourceNameTaken when a file with other bytes has landed under `name` (not recorded: the landed file's record stays)
 * @throws SourceRefused when the file cannot be landed (recorded as refused), or a database error
 */
export async function landFile(
  pool: Pool,
  pipeline: PipelineConfig,
  file: string,
  name: string,
  opts: {
    landingTimeMs?: number;
    onProgress?: (records: number, bytes: number) => void;
    noFollow?: boolean;
    input?: string;
  } = {},
): Promise<LandResult> {
  let opened: Awaited<ReturnType<typeof openSourceFile>> | undefined;
  try {
    opened = await openSourceFile(file, opts.noFollow ?? false);
    if (opened === null) throw new SourceRefused(`no such file: ${file}`);
    // The name has landed before: the same bytes are skipped as already landed; other bytes are refused by name.
    const known = await readSourceFile(pool, pipeline.name, name);
    if (
      known !== undefined &&
      known.sha256 !== null &&
      (known.state === "landed" || known.state === "changed_after_landing")
    ) {
      const these = await hashFile(opened.fh);
      if (these.sha256 !== known.sha256)
        throw new SourceNameTaken(file, name, { sizeBytes: known.sizeBytes, sha256: known.sha256 }, these);
    }
    return await landOpenFile(pool, pipeline, opened.fh, opened.st, name, opts);
  } catch (e) {
    if (e instanceof SourceRefused && !(e instanceof SourceNameTaken)) {
      const st = opened?.st ?? (await lstat(file).catch(() => undefined));
      await markSourceFile(
        pool,
        pipeline,
        name,
        "refused",
        { sizeBytes: st?.size ?? 0, mtimeMs: st?.mtimeMs ?? 0 },
        e.message,
      );
    }
    throw e;
  } finally {
    await opened?.fh.close();
  }
}

/**
 * Lands a stream with no stable name (stdin) under the source key
 * `<kind>:<uuid>`; made-up event ids are `<kind>:<uuid>:<line>`.
 *
 * The stream is first spooled to a temporary file (removed afterwards):
 * landing holds the pipeline's append lock while it reads, and a producer
 * that pauses (`tail -f | straggler ingest -`) must not hold up every other
 * landing of the pipeline meanwhile.
 * @throws the stream's read error, SourceRefused (bad CSV header) or a database error; nothing is landed then
 */
export async function landStream(
  pool: Pool,
  pipeline: PipelineConfig,
  input: Readable,
  kind: string,
  landingTimeMs = Date.now(),
  inputName?: string,
  onProgress?: (records: number) => void,
): Promise<LandResult> {
  const dir = await mkdtemp(spoolPrefix("spool"));
  try {
    const file = path.join(dir, "input");
    await pipe(input, createWriteStream(file, { mode: 0o600 }));
    const fh = await open(file, "r");
    try {
      let headerText: string | undefined;
      const records = readRecords(fileChunks(fh, 0), pipeline.source.format, {
        ...readOptionsFor(pipeline),
        onHeader: (_, text) => (headerText = text),
      });
      return await landRecords(pool, pipeline, `${kind}:${randomUUID()}`, records, {
        landingTimeMs,
        newSource: true,
        csvHeader: () => headerText,
        onProgress,
        ...(inputName === undefined ? {} : { input: inputName }),
      });
    } finally {
      await fh.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
