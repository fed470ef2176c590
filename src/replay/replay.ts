/**
 * Replay: lands a dataset in the order of an arrival-time column, in
 * micro-batches that each span `batchSpan` of arrival time, and runs the
 * stream after each one — what the pipeline would have seen live.
 *
 * The files are first COPYed into a session-temporary table with each row's
 * arrival instant (memory stays flat whatever the dataset's size), then read
 * back in arrival order a page at a time, each page a statement of its own:
 * no snapshot stays open for the replay's length (src/db/sql/ingest/stageReplayRows.ts).
 * One file whose records are already in arrival order skips the staging: it
 * is read twice, a check and then the landing (`inArrivalOrder`).
 * Each span lands as the source `replay:<dataset>:<span start>`, so an
 * interrupted replay resumes where it stopped. Made-up event ids are `<file>:<line>`, the same as landing the
 * files from the landing folder would give, so landing both ways dedupes.
 * Rows whose arrival time cannot be read land in the first micro-batch.
 * When the replay completes, each file is recorded as landed under its own
 * name (with 0 rows), so the service's landing folder does not land it again,
 * and the replay itself is recorded complete (src/db/sql/ingest/replayCompletion.ts):
 * the same replay run again (same files, same span) knows from that one row
 * that every micro-batch was landed, and reads nothing of the files beyond
 * their size and modification time — their bytes (SHA-256) only when the
 * modification time differs. It then lands nothing and says so (`landedBefore`).
 * Rows already in bronze (landed before from the landing folder or by an
 * earlier replay) are quarantined DUPLICATE; the summary says so plainly,
 * with the way to replay from scratch (`straggler drop -p P --yes` first).
 */
import { createHash } from "node:crypto";
import { createReadStream, type Stats } from "node:fs";
import { stat } from "node:fs/promises";
import { pipeline as pipe } from "node:stream/promises";
import path from "node:path";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import { msOfUs, usOfMs } from "../core/instants.js";
import { parseInstant } from "../core/timestamps.js";
import type { Pool, PoolClient } from "../db/pool.js";
import { readLandedPrefix } from "../db/sql/ingest/readLandedPrefix.js";
import { recordReplayedFile } from "../db/sql/ingest/recordReplayedFile.js";
import {
  readReplayCompletions,
  recordReplayCompletion,
  type ReplayCompletion,
} from "../db/sql/ingest/replayCompletion.js";
import {
  copyReplayRows,
  createReplayRows,
  dropReplayRows,
  indexReplayRows,
  readReplayPage,
  replayLine,
  type ReplayRow,
} from "../db/sql/ingest/stageReplayRows.js";
import { landRecords, type LandResult } from "../ingest/copyToBronze.js";
import { classifyInMemory, type ClassifiedLines } from "../ingest/classifyLines.js";
import { SourceRefused } from "../ingest/errors.js";
import { readOptionsFor, readRecords } from "../ingest/readers.js";
import { runBatch, type BatchProgress } from "../stream/runBatch.js";
import { analyzeIfStale, refreshPipelineEstimate, refreshResultsEstimate } from "../db/statistics.js";

export interface ReplayOptions {
  files: string[];
  arrivalField: string;
  /** Span of arrival time per micro-batch, ms. */
  batchSpanMs: number;
  /** Rows read so far before the first micro-batch: staged in the temporary table (`staging`), or checked to be in arrival order in the file (not `staging`). */
  onStaged?: (rows: number, staging: boolean) => void;
  /** A file left out: its header is refused (src/ingest/csvRecords.ts). */
  onRefused?: (file: string, reason: string) => void;
  onBatch?: (info: { rowsDone: number; rowsTotal: number; land: LandResult; batches: BatchProgress[] }) => void;
}

export interface ReplaySummary {
  rowsStaged: number;
  /** False when the dataset (one file already in arrival order) was read straight from the file, true when it was staged in a temporary table. */
  staged: boolean;
  replayBatches: number;
  skippedBatches: number;
  streamBatches: number;
  elapsedMs: number;
  /** Files left out, with the reason. */
  refused: { file: string; reason: string }[];
  /** Rows this run landed in bronze (micro-batches landed before not counted). */
  rowsLanded: number;
  /** Of `rowsLanded`, the rows quarantined DUPLICATE: the same event was already in bronze. */
  duplicateRows: number;
  /** When `duplicateRows` > 0: "N of M rows were already in bronze (DUPLICATE): …" with the way to replay from scratch; else null. */
  alreadyLanded: string | null;
  /**
   * When this replay (the same files, unchanged, and the same span) completed before: "every micro-batch
   * was landed before …", and nothing was read or landed (`replayBatches` 0, `skippedBatches` its
   * micro-batches, `rowsStaged` its rows); else null.
   */
  landedBefore: string | null;
}

/**
 * The replay summary's plain words for rows that were already in bronze, or null when there were none.
 * @param duplicateRows rows this replay landed that were quarantined DUPLICATE
 * @param rowsLanded rows this replay landed
 */
function alreadyLandedMessage(pipeline: string, duplicateRows: number, rowsLanded: number): string | null {
  if (duplicateRows === 0) return null;
  return `${duplicateRows} of ${rowsLanded} rows were already in bronze (DUPLICATE): this data was landed before; to replay from scratch, \`straggler drop -p ${pipeline} --yes\` first`;
}

const FETCH = 5000;

/** Records of one span classified in memory before it lands (about 150 B each); a larger span's rest is classified during its COPY. */
const SPAN_IN_MEMORY = 200_000;

/**
 * Stages every file's records in a temporary table. A file that is refused
 * (a bad CSV header: checked before any of its rows is staged) is left out
 * and reported; the others go on.
 */
async function stage(
  client: PoolClient,
  pipeline: PipelineConfig,
  opts: ReplayOptions,
  refused: ReplaySummary["refused"],
  headers: Set<string>,
): Promise<number> {
  await createReplayRows(client);
  let rows = 0;
  for (const file of opts.files) {
    const origin = path.basename(file);
    let header = true;
    async function* encode(): AsyncGenerator<string> {
      for await (const rec of readRecords(createReadStream(file), pipeline.source.format, {
        ...readOptionsFor(pipeline),
        onHeader: (_, text) => {
          header = false;
          headers.add(text);
        },
      })) {
        rows++;
        if (rows % 10_000 === 0) opts.onStaged?.(rows, true);
        const fields = rec.fields === null ? null : JSON.stringify(rec.fields).replace(/\\u0000/g, "");
        const numbers =
          rec.numbers === undefined
            ? null
            : `{${rec.numbers.map((n) => `"${n.replace(/\u0000/g, "").replace(/[\\"]/g, "\\$&")}"`).join(",")}}`;
        yield replayLine(
          arrivalOf(rec, pipeline, opts.arrivalField),
          origin,
          rec.line,
          rec.raw.replace(/\u0000/g, ""),
          rec.parseError ?? null,
          fields,
          numbers,
        );
      }
    }
    try {
      await copyReplayRows(client, encode());
    } catch (e) {
      // Only a refusal of the header (nothing of the file staged yet) is the file's alone.
      if (!(e instanceof SourceRefused) || !header) throw e;
      refused.push({ file, reason: e.message });
      opts.onRefused?.(file, e.message);
    }
  }
  opts.onStaged?.(rows, true);
  await indexReplayRows(client);
  return rows;
}

/** Where the replay reads its records from, in arrival order: the staging table or the file itself. */
interface RowSource {
  /** The next record in arrival order, without taking it; undefined once every record is read. */
  peek(): Promise<ReplayRow | undefined>;
  /** Takes the record `peek` returned (call only after a `peek` that returned one). */
  take(): ReplayRow;
}

/** The staged records, a page (`FETCH` records, one statement) at a time, on the staging session. */
function stagedRows(staging: PoolClient): RowSource {
  let buffer: ReplayRow[] = [];
  let exhausted = false;
  let last: ReplayRow | null = null;
  return {
    async peek() {
      if (buffer.length === 0 && !exhausted) {
        buffer = await readReplayPage(staging, last, FETCH);
        if (buffer.length === 0) exhausted = true;
        else last = buffer[buffer.length - 1]!;
      }
      return buffer[0];
    },
    take: () => buffer.shift()!,
  };
}

/** A record as the staging table gives it back, read straight from the file (the staging order of one file in arrival order). */
function asStaged(rec: RawRecord, origin: string, arrival: [number, number]): ReplayRow {
  return {
    arrival_ms: arrival[0],
    arrival_sub_ms: arrival[1],
    origin,
    line: rec.line,
    ord: 0,
    raw: rec.raw,
    parse_error: null,
    fields: rec.fields,
    numbers: rec.numbers ?? null,
  };
}

/** `[epoch ms, µs within the ms]` of a record's arrival time, or null when it has none or it cannot be read. */
function arrivalOf(rec: RawRecord, pipeline: PipelineConfig, field: string): [number, number] | null {
  const at = rec.fields?.[field];
  const parsed = at
    ? parseInstant(at, pipeline.timestamps.format, pipeline.timestamps.timeZone, pipeline.timestamps.subMicrosecond)
    : undefined;
  return parsed?.ok ? [msOfUs(parsed.us), Number(parsed.us - usOfMs(msOfUs(parsed.us)))] : null;
}

/**
 * The fast path: one file whose records are already in arrival order is read
 * straight from the file, twice (a check, then the landing), instead of being
 * staged and read back from a temporary table. The records and their order
 * are those staging would give: the staging order of a file in arrival order
 * is its own order (arrival instant, then line), so the first pass checks
 * that every record has a readable arrival time, never goes back in time,
 * carries no NUL (staging removes NULs) and has fields (a record the reader
 * could not make fields of is staged first). Any other dataset is staged.
 * @returns the records' source and count, or null when the dataset must be staged
 */
async function inArrivalOrder(
  pipeline: PipelineConfig,
  opts: ReplayOptions,
  headers: Set<string>,
): Promise<{ rows: RowSource; total: number } | null> {
  if (opts.files.length !== 1) return null;
  const file = opts.files[0]!;
  const origin = path.basename(file);
  const read = (onHeader?: (text: string) => void) =>
    readRecords(createReadStream(file), pipeline.source.format, {
      ...readOptionsFor(pipeline),
      ...(onHeader ? { onHeader: (_: unknown, text: string) => onHeader(text) } : {}),
    });
  let total = 0;
  let before: [number, number] = [-Infinity, -1];
  const seen = new Set<string>();
  // The spans in file order, each with its count of records: the landing pass reads no arrival time again.
  const spans: { start: number; rows: number }[] = [];
  try {
    for await (const rec of read((text) => seen.add(text))) {
      const arrival = arrivalOf(rec, pipeline, opts.arrivalField);
      if (rec.fields === null || arrival === null || rec.raw.includes("\u0000")) return null;
      if (arrival[0] < before[0] || (arrival[0] === before[0] && arrival[1] < before[1])) return null;
      before = arrival;
      const start = Math.floor(arrival[0] / opts.batchSpanMs) * opts.batchSpanMs;
      if (spans.length === 0 || spans[spans.length - 1]!.start !== start) spans.push({ start, rows: 0 });
      spans[spans.length - 1]!.rows++;
      total++;
      if (total % 10_000 === 0) opts.onStaged?.(total, false);
    }
  } catch (e) {
    // A refused header is reported by the staging path, which reads the file again.
    if (e instanceof SourceRefused) return null;
    throw e;
  }
  opts.onStaged?.(total, false);
  for (const h of seen) headers.add(h);
  const records = read()[Symbol.asyncIterator]();
  let next: ReplayRow | undefined;
  let done = false;
  let span = 0,
    left = spans[0]?.rows ?? 0;
  return {
    total,
    rows: {
      async peek() {
        if (next === undefined && !done) {
          const r = await records.next();
          if (r.done) done = true;
          else {
            if (left === 0) [span, left] = [span + 1, spans[span + 1]?.rows ?? 0];
            // The file changed between the two passes: what was checked no longer holds.
            if (left === 0 || r.value.fields === null)
              throw new Error(
                `${file} changed while it was replayed (more records than checked, or one without fields, at line ${r.value.line}); run the replay again`,
              );
            left--;
            // Its span's start stands for its arrival: the spans were counted by the check pass.
            next = asStaged(r.value, origin, [spans[span]!.start, 0]);
          }
        }
        return next;
      },
      take() {
        const r = next!;
        next = undefined;
        return r;
      },
    },
  };
}

/**
 * Files of a replay that share a base name, which is a file source's name (made-up event ids are
 * `<name>:<line>`, the landing folder knows a replayed file by it): `[name, paths]` for the first such name, or
 * undefined. Two such files would make the second's events DUPLICATEs of the first's.
 */
function sharedFileName(files: string[]): [string, string[]] | undefined {
  const byName = new Map<string, string[]>();
  for (const f of files) byName.set(path.basename(f), [...(byName.get(path.basename(f)) ?? []), f]);
  return [...byName].find(([, paths]) => paths.length > 1);
}

/** Why a replay of `files` is refused before anything is staged (two files share a name), or undefined. */
export function replayFilesProblem(files: string[]): string | undefined {
  const shared = sharedFileName(files);
  return (
    shared &&
    `${shared[1].join(" and ")} share the name ${shared[0]}, which is a file source's name (its made-up event ids are ${shared[0]}:<line>): give each file a name of its own`
  );
}

/** A dataset's identity: its files' names and sizes (a changed file makes a new replay). */
function datasetId(files: string[], stats: Stats[]): string {
  const h = createHash("sha256");
  files.forEach((f, i) => h.update(`${path.basename(f)}:${stats[i]!.size}\n`));
  return h.digest("hex").slice(0, 12);
}

/** The files' names, sizes and modification times (whole ms), hashed: what proves them unchanged without reading them. */
function statFingerprint(files: string[], stats: Stats[]): string {
  const h = createHash("sha256");
  files.forEach((f, i) => h.update(`${path.basename(f)}:${stats[i]!.size}:${Math.trunc(stats[i]!.mtimeMs)}\n`));
  return h.digest("hex").slice(0, 16);
}

/** SHA-256 (hex) of the files' bytes, one after the other. */
async function contentHash(files: string[]): Promise<string> {
  const h = createHash("sha256");
  for (const f of files)
    await pipe(createReadStream(f), async function* (chunks: AsyncIterable<Buffer>) {
      for await (const c of chunks) h.update(c);
    });
  return h.digest("hex");
}

/**
 * The completed replay of these files with this span, when one is recorded and the files are unchanged:
 * the same names, sizes and modification times, or (a modification time differs) the same bytes. One query;
 * the files are read only in the second case.
 */
async function completedBefore(
  pool: Pool,
  pipeline: PipelineConfig,
  tag: string,
  spanMs: number,
  fingerprint: string,
  files: string[],
): Promise<{ completion: ReplayCompletion; by: "stat" | "sha256" } | null> {
  const completions = (await readReplayCompletions(pool, pipeline.name, tag)).filter((c) => c.spanMs === spanMs);
  // A completion found again by its bytes is recorded again with the new fingerprint: the first record's time is the replay's.
  const firstOf = (c: ReplayCompletion) => ({
    ...c,
    completedAt: completions
      .filter((x) => x.sha256 === c.sha256)
      .map((x) => x.completedAt)
      .sort()[0]!,
  });
  const same = completions.find((c) => c.statFingerprint === fingerprint);
  if (same) return { completion: firstOf(same), by: "stat" };
  if (completions.length === 0) return null;
  const sha256 = await contentHash(files);
  const sameBytes = completions.find((c) => c.sha256 === sha256);
  return sameBytes ? { completion: firstOf(sameBytes), by: "sha256" } : null;
}

/** The summary's words for a replay that completed before. */
function landedBeforeMessage(
  c: Pick<ReplayCompletion, "batches" | "rows" | "completedAt">,
  by: "stat" | "sha256",
): string {
  return (
    `every micro-batch was landed before (${c.batches} micro-batches, ${c.rows} rows; this replay completed at ${c.completedAt}): nothing landed; ` +
    (by === "stat"
      ? "the files' sizes and modification times are unchanged, so they were not read"
      : "the files' modification times changed but their SHA-256 did not")
  );
}

/**
 * Replays `opts.files` through landing and the stream of `pipeline`.
 * @returns counts and elapsed time; per-batch results arrive through `onBatch`
 * @throws Error when two files share a base name (`replayFilesProblem`), before anything is staged
 * @throws when a file cannot be read or the database fails (landed spans stay landed; run again to resume)
 */
export async function replay(pool: Pool, pipeline: PipelineConfig, opts: ReplayOptions): Promise<ReplaySummary> {
  const problem = replayFilesProblem(opts.files);
  if (problem !== undefined) throw new Error(`replay refused: ${problem}`);
  const started = Date.now();
  const stats = await Promise.all(opts.files.map((f) => stat(f)));
  const id = datasetId(opts.files, stats);
  const fingerprint = statFingerprint(opts.files, stats);
  const before = await completedBefore(pool, pipeline, `replay:${id}`, opts.batchSpanMs, fingerprint, opts.files);
  if (before !== null) {
    const { completion: c, by } = before;
    // Read again by its bytes: record this fingerprint too, so the next run needs only the stat.
    if (by === "sha256")
      await recordReplayCompletion(pool, pipeline.name, `replay:${id}`, { ...c, statFingerprint: fingerprint });
    return {
      rowsStaged: c.rows,
      staged: false,
      replayBatches: 0,
      skippedBatches: c.batches,
      streamBatches: 0,
      rowsLanded: 0,
      duplicateRows: 0,
      elapsedMs: Date.now() - started,
      refused: [],
      alreadyLanded: null,
      landedBefore: landedBeforeMessage(c, by),
    };
  }
  const client = await pool.connect();
  try {
    const refused: ReplaySummary["refused"] = [];
    // The CSV header lines read: when every file has the same one, it is recorded with each landed span (for a rebuild).
    const headers = new Set<string>();
    // One file already in arrival order is read straight from the file; any other dataset is staged.
    const direct = await inArrivalOrder(pipeline, opts, headers);
    const total = direct?.total ?? (await stage(client, pipeline, opts, refused, headers));
    const csvHeader = headers.size === 1 ? [...headers][0] : undefined;
    // Pages are read on the staging session; landings and batches run on other connections.
    const counts = await replaySpans(
      pool,
      direct?.rows ?? stagedRows(client),
      pipeline,
      `replay:${id}`,
      started,
      total,
      opts,
      csvHeader,
    );
    await analyzeIfStale(pool, pipeline.name);
    // The files are now in bronze: the landing folder must not land them again.
    // They are recorded with 0 rows (their rows count under the replay:… sources).
    for (const file of opts.files) {
      if (refused.some((r) => r.file === file)) continue;
      await recordReplayedFile(pool, pipeline.name, path.basename(file), `replay:${id}`);
    }
    // Complete (no file left out): a run of the same replay again needs only this record. Not when
    // a file changed while it was replayed (its stat now differs): what landed is not what it holds.
    if (refused.length === 0) {
      const sha256 = await contentHash(opts.files);
      if (statFingerprint(opts.files, await Promise.all(opts.files.map((f) => stat(f)))) === fingerprint) {
        await recordReplayCompletion(pool, pipeline.name, `replay:${id}`, {
          spanMs: opts.batchSpanMs,
          batches: counts.replayBatches + counts.skippedBatches,
          rows: total,
          statFingerprint: fingerprint,
          sha256,
        });
      }
    }
    return {
      rowsStaged: total,
      staged: direct === null,
      ...counts,
      elapsedMs: Date.now() - started,
      refused,
      alreadyLanded: alreadyLandedMessage(pipeline.name, counts.duplicateRows, counts.rowsLanded),
      landedBefore: null,
    };
  } finally {
    await dropReplayRows(client);
    client.release();
  }
}

/**
 * Reads the records from `rows` in arrival order, span by span of arrival
 * time; lands each span as the source `<sourcePrefix>:<span start>` and runs
 * the stream until the span's rows are consumed, while the next span lands.
 * @param started when the replay started, epoch ms: the landing time of records without an arrival time
 * @returns the spans landed and skipped (landed before), the stream's batches, the rows landed and those of them quarantined DUPLICATE
 */
async function replaySpans(
  pool: Pool,
  rows: RowSource,
  pipeline: PipelineConfig,
  sourcePrefix: string,
  started: number,
  total: number,
  opts: ReplayOptions,
  csvHeader: string | undefined,
): Promise<{
  replayBatches: number;
  skippedBatches: number;
  streamBatches: number;
  rowsLanded: number;
  duplicateRows: number;
}> {
  const span = opts.batchSpanMs;
  const spanOf = (r: ReplayRow) => (r.arrival_ms === null ? null : Math.floor(r.arrival_ms / span) * span);
  let done = 0,
    replayBatches = 0,
    skipped = 0,
    streamBatches = 0,
    rowsLanded = 0,
    duplicateRows = 0;
  /** Streams one span's rows: micro-batches up to its last `seq` (no extra empty batch per span). */
  const streamSpan = async (land: LandResult, rowsDone: number, spans: number) => {
    const batches: BatchProgress[] = [];
    for (;;) {
      const b = await runBatch(pool, pipeline, "replay", land.lastSeq === null ? {} : { untilSeq: land.lastSeq });
      if (b === null) break;
      batches.push(b);
      if (land.lastSeq !== null && b.endOffset >= land.lastSeq) break;
    }
    streamBatches += batches.length;
    // Every 100 spans, only the pipeline's estimates (its bronze rows, its windows): a table-wide
    // ANALYZE of bronze every 100 spans took a fifth of the taxi replay. The tables are refreshed
    // once, at the end.
    if (spans % 100 === 0) {
      await refreshPipelineEstimate(pool, pipeline.name);
      await refreshResultsEstimate(pool, pipeline.name);
    }
    opts.onBatch?.({ rowsDone, rowsTotal: total, land, batches });
  };
  // The previous span's stream runs while this span lands (on other connections): each
  // span's micro-batches read only its rows (untilSeq), as when they ran one after the other.
  let streaming: Promise<void> | undefined;
  // The spans an earlier run of this replay landed (a resumed replay skips them).
  const landedBefore = await readLandedPrefix(pool, pipeline.name, `${sourcePrefix}:`);
  /** One span classified in memory (before its landing takes the append lock), with what its landing needs. */
  interface NextSpan {
    source: string;
    landingTimeMs: number;
    classified: ClassifiedLines;
    rowsDone: number;
  }
  /** Reads and classifies the next span's records, or undefined when every record is read. */
  const classifyNext = async (): Promise<NextSpan | undefined> => {
    const first = await rows.peek();
    if (first === undefined) return undefined;
    const current = spanOf(first);
    async function* records(): AsyncGenerator<RawRecord> {
      for (;;) {
        const next = await rows.peek();
        if (next === undefined || spanOf(next) !== current) return;
        const r = rows.take();
        done++;
        yield r.fields === null
          ? { line: r.line, raw: r.raw, fields: null, parseError: r.parse_error ?? "not a record", origin: r.origin }
          : {
              line: r.line,
              raw: r.raw,
              fields: r.fields,
              origin: r.origin,
              ...(r.numbers === null ? {} : { numbers: r.numbers }),
            };
      }
    }
    const label = current === null ? "no-arrival-time" : new Date(current).toISOString();
    // Records without an ingestion time of their own arrive at the end of their span.
    const landingTimeMs = current === null ? started : current + span;
    // The span's rows classified now, before its landing's turn: the landing's transaction only writes
    // them. A span of more than SPAN_IN_MEMORY records keeps the rest to be read during its COPY.
    const classified = await classifyInMemory(
      pipeline,
      `${sourcePrefix}:${label}`,
      records(),
      { landingTimeMs, elideRaw: () => csvHeader !== undefined },
      SPAN_IN_MEMORY,
    );
    return { source: `${sourcePrefix}:${label}`, landingTimeMs, classified, rowsDone: done };
  };
  /** Lands a classified span and starts its stream once the previous span's stream is done. */
  const landSpan = async (next: NextSpan) => {
    // One WAL flush per span, not two: the span's landing commits without waiting for its
    // flush, and its micro-batch (which waits) flushes both. A crash before that may undo
    // the landing: its source is then not recorded, and a resumed replay lands it again.
    // A span not landed when the replay started is new: its landing skips the two look-ups of an
    // earlier landing (one before the append lock, one under it). Landed meanwhile by another
    // replay, its record's unique key still refuses it, and the landing answers as landed before.
    const land = await landRecords(pool, pipeline, next.source, next.classified, {
      landingTimeMs: next.landingTimeMs,
      csvHeader: () => csvHeader,
      commitWithoutFlushWait: true,
      newSource: !landedBefore.has(next.source),
    });
    if (land.alreadyLanded) {
      skipped++;
      if (next.classified.rest !== null) for await (const _ of next.classified.rest) void _; // skip the span's rows
    } else {
      replayBatches++;
      rowsLanded += land.landed;
      duplicateRows += land.byReason.DUPLICATE ?? 0;
    }
    await streaming;
    streaming = streamSpan(land, next.rowsDone, replayBatches + skipped);
    // Awaited at the next span or below; a failure meanwhile is not unhandled.
    streaming.catch(() => undefined);
  };
  // The next span is classified while this one lands (the landing waits on the server) and
  // while the one before streams.
  let landing: Promise<void> | undefined;
  try {
    for (;;) {
      // A span held whole in memory is classified while the previous one lands; a larger one's rest
      // is read during its own COPY, so it waits for the previous landing first.
      const next = await classifyNext();
      await landing;
      if (next === undefined) break;
      landing = landSpan(next);
      landing.catch(() => undefined); // awaited above at the next span; a failure meanwhile is not unhandled
      if (next.classified.rest !== null) await landing;
    }
    await streaming;
  } finally {
    // A landing that failed leaves no micro-batch running behind it.
    await landing?.catch(() => undefined);
    await streaming?.catch(() => undefined);
  }
  return { replayBatches, skippedBatches: skipped, streamBatches, rowsLanded, duplicateRows };
}
