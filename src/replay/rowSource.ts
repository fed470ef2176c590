/**
 * The replay's fast path: one file already in arrival order is read straight from the file
 * (`inArrivalOrder`: a check pass, then the landing pass), neither sorted in memory nor staged
 * (src/replay/ordering.ts).
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import type { ReplayRow } from "../db/sql/ingest/stageReplayRows.js";
import { SourceRefused } from "../ingest/errors.js";
import { readOptionsFor, readRecords } from "../ingest/readers.js";
import { arrivalOf, type RowSource } from "./ordering.js";
import type { SpanNaming, SpanSource } from "./spanSource.js";
import type { ReplayOptions } from "./types.js";
import { startSpanWorker, type CheckedSpan } from "./workerSpans.js";

/** Files of at least this many bytes are read and classified on a worker thread (`ReplayOptions.workerFromBytes`). */
const WORKER_FROM_BYTES = 4 * 2 ** 20;

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

/**
 * The fast path: one file whose records are already in arrival order is read
 * straight from the file, twice (a check, then the landing), instead of being
 * staged and read back from a temporary table. A file of at least
 * `workerFromBytes` (4 MiB) is read the second time on a worker thread, which
 * starts with the check and classifies the spans as well (src/replay/workerSpans.ts). The records and their order
 * are those staging would give: the staging order of a file in arrival order
 * is its own order (arrival instant, then line), so the first pass checks
 * that every record has a readable arrival time, never goes back in time,
 * carries no NUL (staging removes NULs) and has fields (a record the reader
 * could not make fields of is staged first). Any other dataset is staged.
 * @param naming how spans are cut and named (the worker classifies them)
 * @returns the records' source (or, from the worker, the spans classified) and count, or null when the dataset must be staged
 */
export async function inArrivalOrder(
  pipeline: PipelineConfig,
  opts: ReplayOptions,
  headers: Set<string>,
  naming: SpanNaming,
): Promise<{ rows: RowSource; total: number } | { spans: SpanSource; total: number } | null> {
  if (opts.files.length !== 1) return null;
  const file = opts.files[0]!;
  // A large file's spans are read and classified on a worker thread, from now: while this thread checks.
  const { size } = await stat(file);
  const worker =
    size >= (opts.workerFromBytes ?? WORKER_FROM_BYTES)
      ? startSpanWorker(pipeline, file, opts.arrivalField, naming)
      : undefined;
  const checked = await checkOrder(pipeline, opts, file, headers).catch(async (e: unknown) => {
    await worker?.close();
    throw e;
  });
  if (checked === null) {
    await worker?.close();
    return null;
  }
  const { spans, total } = checked;
  if (worker !== undefined) return { spans: worker.spans(spans), total };
  const origin = path.basename(file);
  const read = () => readRecords(createReadStream(file), pipeline.source.format, readOptionsFor(pipeline));
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
 * The check pass: whether every record of `file` has fields, a readable arrival time and no NUL, and
 * none goes back in time; its CSV header lines go in `headers`.
 * @returns the spans in file order, each with its count of records, and the records; null when the file must be staged
 */
async function checkOrder(
  pipeline: PipelineConfig,
  opts: ReplayOptions,
  file: string,
  headers: Set<string>,
): Promise<{ spans: CheckedSpan[]; total: number } | null> {
  const seen = new Set<string>();
  const records = readRecords(createReadStream(file), pipeline.source.format, {
    ...readOptionsFor(pipeline),
    onHeader: (_: unknown, text: string) => seen.add(text),
  });
  let total = 0;
  let before: [number, number] = [-Infinity, -1];
  // The spans in file order, each with its count of records: the landing pass reads no arrival time again.
  const spans: CheckedSpan[] = [];
  try {
    for await (const rec of records) {
      const arrival = arrivalOf(rec, pipeline, opts.arrivalField);
      if (rec.fields === null || arrival === null || rec.raw.includes("\u0000")) return null;
      if (arrival[0] < before[0] || (arrival[0] === before[0] && arrival[1] < before[1])) return null;
      before = arrival;
      const start = Math.floor(arrival[0] / opts.batchSpanMs) * opts.batchSpanMs;
      if (spans.length === 0 || spans[spans.length - 1]!.start !== start) spans.push({ start, rows: 0 });
      spans[spans.length - 1]!.rows++;
      total++;
      if (total % 10_000 === 0) opts.onStaged?.(total, "file");
    }
  } catch (e) {
    // A refused header is reported by the staging path, which reads the file again.
    if (e instanceof SourceRefused) return null;
    throw e;
  }
  opts.onStaged?.(total, "file");
  for (const h of seen) headers.add(h);
  return { spans, total };
}
