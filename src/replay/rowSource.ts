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
import { readOptionsFor, readRecords } from "../ingest/readers.js";
import type { RowSource } from "./ordering.js";
import { fileChanged, type SpanNaming, type SpanSource } from "./spanSource.js";
import type { ReplayOptions } from "./types.js";
import { checkOrder } from "./checkOrder.js";
import { startSpanWorker } from "./workerSpans.js";

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
  const threads = size >= (opts.workerFromBytes ?? WORKER_FROM_BYTES);
  const worker = threads ? startSpanWorker(pipeline, file, opts.arrivalField, naming) : undefined;
  // The check in two halves at once on a file that large (src/replay/checkOrder.ts).
  const checked = await checkOrder(pipeline, opts, file, size, headers, threads).catch(async (e: unknown) => {
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
  const records = readRecords(createReadStream(file), pipeline.source.format, readOptionsFor(pipeline))[
    Symbol.asyncIterator
  ]();
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
              throw fileChanged(file, `more records than checked, or one without fields, at line ${r.value.line}`);
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
