/**
 * The replay's span worker (a `worker_threads` worker, started by src/replay/workerSpans.ts): reads one
 * file already in arrival order, cuts its records into spans of arrival time and classifies each span into
 * its COPY lines (src/ingest/classifyLines.ts), as the replay's own thread would, and posts them in order.
 * The replay's thread meanwhile checks the file's order, lands the spans before and streams them: reading
 * and classifying (about 8 µs a record) no longer wait for the landing's COPY or the stream's statements.
 *
 * Messages posted (`SpanPiece`, then `{ kind: "end" }`, or `{ kind: "error" }`): a span of at most
 * `SPAN_IN_MEMORY` records (and `SPAN_IN_MEMORY_CHARS` of lines) is one piece; a larger one several, its tally on the last. It posts while its
 * credit (characters of COPY lines, `budgetChars` to start with) is above 0; the replay gives a piece's
 * characters back when it takes the piece, so at most about `budgetChars` wait in memory.
 */
import { createReadStream } from "node:fs";
import path from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import { classifier, type LineTally } from "../ingest/classifyLines.js";
import { readOptionsFor, readRecords } from "../ingest/readers.js";
import { arrivalOf } from "./ordering.js";
import {
  fileChanged,
  SPAN_IN_MEMORY,
  SPAN_IN_MEMORY_CHARS,
  spanIdentity,
  spanStartOf,
  summarizeFor,
  type SpanNaming,
} from "./spanSource.js";

/** What the worker is started with (`workerData`). */
export interface SpanWorkerData {
  pipeline: PipelineConfig;
  file: string;
  arrivalField: string;
  naming: SpanNaming;
  /** Characters of COPY lines the worker may have posted and the replay not yet taken. */
  budgetChars: number;
}

/** A span's tally as it crosses threads: the SHA-256 already digested (hex), the ids as a list. */
export type WireTally = Omit<LineTally, "hash" | "acceptedIds"> & { sha256: string; acceptedIds: string[] | null };

/** Some or all of one span's COPY lines, in order. */
export interface SpanPiece {
  kind: "piece";
  /** The span's start, epoch ms (null: records without an arrival time). */
  start: number | null;
  /** One COPY line a record. */
  lines: string[];
  /** Characters of `lines` (counted as they were made: the credit the replay gives back). */
  chars: number;
  /** The span's last piece: `tally` is set. */
  last: boolean;
  tally?: WireTally;
  /** Records read so far. */
  rowsDone: number;
}

export type WorkerMessage = SpanPiece | { kind: "end" } | { kind: "error"; message: string };

/** The replay's thread gives characters of credit back. */
export interface CreditMessage {
  kind: "credit";
  chars: number;
}

/** Lines a piece after a large span's first holds (what the COPY reads while the next is classified). */
const REST_PIECE = 16_384;

async function main(port: NonNullable<typeof parentPort>, data: SpanWorkerData): Promise<void> {
  const { pipeline, file, arrivalField, naming } = data;
  let credit = data.budgetChars;
  let wake: (() => void) | undefined;
  port.on("message", (m: CreditMessage) => {
    credit += m.chars;
    wake?.();
    wake = undefined;
  });
  const post = async (piece: SpanPiece) => {
    while (credit <= 0) await new Promise<void>((r) => (wake = r));
    credit -= piece.chars;
    port.postMessage(piece satisfies WorkerMessage);
  };
  let header: string | undefined;
  const origin = path.basename(file);
  const records = readRecords(createReadStream(file), pipeline.source.format, {
    ...readOptionsFor(pipeline),
    onHeader: (_: unknown, text: string) => (header = text),
  });
  /** The span being classified: its start, its classifier and tally, its lines not yet posted. */
  let span:
    | {
        start: number | null;
        line: (rec: RawRecord) => string;
        tally: LineTally;
        lines: string[];
        /** Characters of `lines`. */
        chars: number;
        posted: boolean;
      }
    | undefined;
  let done = 0;
  const finish = async (s: NonNullable<typeof span>) => {
    const { hash, acceptedIds, ...tally } = s.tally;
    const ids = acceptedIds === null ? null : [...acceptedIds];
    await post({
      kind: "piece",
      start: s.start,
      lines: s.lines,
      chars: s.chars,
      last: true,
      tally: { ...tally, sha256: hash.digest("hex"), acceptedIds: ids },
      rowsDone: done,
    });
  };
  // One loop over the records, each classified as it is read (no generator between the reader and the classifier).
  for await (const rec of records) {
    // The check pass found fields in every record (else the file is staged, and this worker stopped).
    if (rec.fields === null) throw fileChanged(file, `a record without fields at line ${rec.line}`);
    const start = spanStartOf(arrivalOf(rec, pipeline, arrivalField)?.[0] ?? null, naming.spanMs);
    if (span === undefined || span.start !== start) {
      if (span !== undefined) await finish(span);
      const { source, landingTimeMs } = spanIdentity(start, naming);
      const opts = {
        landingTimeMs,
        elideRaw: () => header !== undefined,
        collectIds: SPAN_IN_MEMORY,
        summarize: summarizeFor(pipeline),
      };
      span = { start, ...classifier(pipeline, source, opts), lines: [], chars: 0, posted: false };
    }
    done++;
    rec.origin = origin;
    const line = span.line(rec);
    span.lines.push(line);
    span.chars += line.length;
    if (
      span.posted
        ? span.lines.length === REST_PIECE
        : span.lines.length === SPAN_IN_MEMORY || span.chars >= SPAN_IN_MEMORY_CHARS
    ) {
      // A span larger than SPAN_IN_MEMORY records (or SPAN_IN_MEMORY_CHARS of lines): its first lines up to those
      // bounds (held whole, as the replay's own thread holds them), then the rest REST_PIECE lines at a time, the
      // tally with the last.
      await post({ kind: "piece", start, lines: span.lines, chars: span.chars, last: false, rowsDone: done });
      span.lines = [];
      span.chars = 0;
      span.posted = true;
    }
  }
  if (span !== undefined) await finish(span);
  port.postMessage({ kind: "end" } satisfies WorkerMessage);
}

if (parentPort !== null) {
  const port = parentPort;
  main(port, workerData as SpanWorkerData).catch((e: unknown) =>
    port.postMessage({ kind: "error", message: e instanceof Error ? e.message : String(e) } satisfies WorkerMessage),
  );
}
