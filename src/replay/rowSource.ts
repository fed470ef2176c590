/**
 * Where a replay reads its records from, in arrival order: staged in a session-temporary table and read
 * back a page at a time (src/db/sql/ingest/stageReplayRows.ts), or, for one file already in arrival
 * order, straight from the file (`inArrivalOrder`: a check pass, then the landing pass).
 */
import { createReadStream } from "node:fs";
import path from "node:path";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import { msOfUs, usOfMs } from "../core/instants.js";
import { parseInstant } from "../core/timestamps.js";
import type { PoolClient } from "../db/pool.js";
import {
  copyReplayRows,
  createReplayRows,
  indexReplayRows,
  readReplayPage,
  replayLine,
  type ReplayRow,
} from "../db/sql/ingest/stageReplayRows.js";
import { SourceRefused } from "../ingest/errors.js";
import { readOptionsFor, readRecords } from "../ingest/readers.js";
import type { ReplayOptions, ReplaySummary } from "./types.js";

const FETCH = 5000;

/**
 * Stages every file's records in a temporary table. A file that is refused
 * (a bad CSV header: checked before any of its rows is staged) is left out
 * and reported; the others go on.
 */
export async function stage(
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
export interface RowSource {
  /** The next record in arrival order, without taking it; undefined once every record is read. */
  peek(): Promise<ReplayRow | undefined>;
  /** Takes the record `peek` returned (call only after a `peek` that returned one). */
  take(): ReplayRow;
}

/** The staged records, a page (`FETCH` records, one statement) at a time, on the staging session. */
export function stagedRows(staging: PoolClient): RowSource {
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
export async function inArrivalOrder(
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
