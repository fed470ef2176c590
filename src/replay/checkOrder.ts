/**
 * The replay's check pass over one file (src/replay/rowSource.ts): whether every record has fields, a readable
 * arrival time and no NUL, and none goes back in time, counting the records of each span of arrival time. A
 * file large enough for the replay's worker threads (`ReplayOptions.workerFromBytes`) is checked in two halves at once, the second on a worker thread
 * (src/replay/checkWorker.ts), split at the line end nearest its middle: the halves agree when the first ends
 * exactly there (no quoted field spans the split; else the file is checked whole, on this thread) and the
 * second starts no earlier than the first ends.
 */
import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import type { Worker } from "node:worker_threads";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import type { CsvColumns } from "../ingest/csvRecords.js";
import { SourceRefused } from "../ingest/errors.js";
import { readOptionsFor, readRecords } from "../ingest/readers.js";
import { fastCheck } from "./fastCheck.js";
import { arrivalOf } from "./ordering.js";
import { ArrivalSpans, arrivesBefore, type Arrival, type CheckedSpan } from "./arrivalSpans.js";
import { startWorker } from "./threads.js";
import type { ReplayOptions } from "./types.js";

/** What the check of some records found: their spans in order, their count, the first and last arrival ([ms, µs within]). */
export interface Checked {
  spans: CheckedSpan[];
  total: number;
  first: Arrival | null;
  last: Arrival | null;
}

/**
 * Checks `records` in order.
 * @param onCount called every 10,000 records with the count so far
 * @returns what they hold, or null when one has no fields, no readable arrival time or a NUL, or goes back in time
 */
export async function checkRecords(
  records: AsyncIterable<RawRecord>,
  pipeline: PipelineConfig,
  arrivalField: string,
  spanMs: number,
  onCount?: (n: number) => void,
): Promise<Checked | null> {
  const counted = new ArrivalSpans(spanMs, onCount);
  for await (const rec of records) {
    const arrival = arrivalOf(rec, pipeline, arrivalField);
    if (rec.fields === null || arrival === null || rec.raw.includes("\u0000")) return null;
    if (!counted.add(arrival)) return null;
  }
  return { spans: counted.spans, total: counted.total, first: counted.first, last: counted.last };
}

/** What the check worker is started with. */
export interface CheckWorkerData {
  pipeline: PipelineConfig;
  file: string;
  arrivalField: string;
  spanMs: number;
  /** The byte its half starts at: a line's first. */
  from: number;
  /** The file's CSV header, read by the first half (undefined for JSON lines). */
  header: CsvColumns | undefined;
}

export type CheckWorkerMessage = { kind: "done"; checked: Checked | null } | { kind: "error"; message: string };

/** The first line end at or after the middle of `file`: the second half starts after it; null when there is none before the end. */
async function middleLineStart(file: string, size: number): Promise<number | null> {
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(64 * 1024);
    for (let at = Math.floor(size / 2); at < size; at += buf.length) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, at);
      const nl = buf.subarray(0, bytesRead).indexOf(10);
      if (nl >= 0) return at + nl + 1 < size ? at + nl + 1 : null;
      if (bytesRead === 0) return null;
    }
    return null;
  } finally {
    await fh.close();
  }
}

/**
 * The check pass over `file`; its CSV header lines go in `headers`.
 * @param parallel check it in two halves at once (a file large enough to be worth a thread)
 * @returns the spans in file order with their counts, and the records; null when the file must be staged
 * @throws what reading the file throws (a refused header returns null: the staging path reports it)
 */
export async function checkOrder(
  pipeline: PipelineConfig,
  opts: ReplayOptions,
  file: string,
  size: number,
  headers: Set<string>,
  parallel: boolean,
): Promise<{ spans: CheckedSpan[]; total: number } | null> {
  const report = (n: number) => opts.onStaged?.(n, "file");
  // A plain CSV file is checked on its bytes, without making records (src/replay/fastCheck.ts), when that can tell.
  const fast =
    opts.checkOnBytes === false
      ? undefined
      : await fastCheck(pipeline, file, opts.arrivalField, opts.batchSpanMs, report);
  if (fast === null) return null;
  if (fast !== undefined) {
    report(fast.total);
    headers.add(fast.header);
    return { spans: fast.spans, total: fast.total };
  }
  const split = parallel ? await middleLineStart(file, size) : null;
  const seen = new Set<string>();
  let worker: Worker | undefined;
  let second: Promise<Checked | null> | undefined;
  const startSecond = (header: CsvColumns | undefined) => {
    if (split === null || worker !== undefined) return;
    const data: CheckWorkerData = {
      pipeline,
      file,
      arrivalField: opts.arrivalField,
      spanMs: opts.batchSpanMs,
      from: split,
      header,
    };
    const w = (worker = startWorker("checkWorker", data));
    second = new Promise<Checked | null>((resolve, reject) => {
      w.once("message", (m: CheckWorkerMessage) =>
        m.kind === "done" ? resolve(m.checked) : reject(new Error(m.message)),
      );
      w.once("error", reject);
      w.once("exit", (code) => reject(new Error(`the replay's check worker stopped (exit code ${code})`)));
    });
    second.catch(() => undefined); // awaited below; a failure meanwhile is not unhandled
  };
  let all: Checked | null;
  try {
    const position = { offset: 0, line: 0 };
    const records = readRecords(
      createReadStream(file, split === null ? {} : { end: split - 1 }),
      pipeline.source.format,
      {
        ...readOptionsFor(pipeline),
        onHeader: (columns: CsvColumns, text: string) => {
          seen.add(text);
          startSecond(columns);
        },
        ...(split === null ? {} : { unterminated: "hold" as const, position }),
      },
    );
    if (pipeline.source.format !== "csv") startSecond(undefined);
    const a = await checkRecords(records, pipeline, opts.arrivalField, opts.batchSpanMs, report);
    all = a;
    if (split !== null && a !== null) {
      // A quoted field spans the split (the first half ended before it): the file is checked whole, here.
      if (position.offset !== split || second === undefined) {
        await worker?.terminate();
        worker = undefined;
        // Not on bytes again: that check left this file to this one already.
        return await checkOrder(pipeline, { ...opts, checkOnBytes: false }, file, size, headers, false);
      }
      const b = await second;
      if (b === null) return null;
      if (a.last !== null && b.first !== null && arrivesBefore(b.first, a.last)) return null;
      const spans = [...a.spans];
      for (const s of b.spans) {
        const tail = spans[spans.length - 1];
        if (tail !== undefined && tail.start === s.start)
          spans[spans.length - 1] = { start: s.start, rows: tail.rows + s.rows };
        else spans.push(s);
      }
      all = { spans, total: a.total + b.total, first: a.first ?? b.first, last: b.last ?? a.last };
    }
  } catch (e) {
    // A refused header is reported by the staging path, which reads the file again.
    if (e instanceof SourceRefused) return null;
    throw e;
  } finally {
    await worker?.terminate().catch(() => undefined);
  }
  if (all === null) return null;
  report(all.total);
  for (const h of seen) headers.add(h);
  return { spans: all.spans, total: all.total };
}
