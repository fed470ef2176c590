/**
 * Where the replay's landing loop (src/replay/spans.ts) takes its spans from: each span of arrival time
 * read and classified (admission, DESIGN §7–8) into COPY lines before its landing takes the append lock.
 * Either here, on the loop's own thread, from records in arrival order (`spansOf`: sorted in memory or
 * read back from the staging table), or on a worker thread reading one file already in arrival order
 * (src/replay/workerSpans.ts).
 */
import { aggregatesOnTime, type PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import type { ReplayRow } from "../db/sql/ingest/stageReplayRows.js";
import { classifyInMemory, type ClassifiedLines } from "../ingest/classifyLines.js";
import type { RowSource } from "./ordering.js";

/**
 * Records of one span classified in memory before it lands, and at most this many characters of their COPY
 * lines (12 Mi: about 95,000 peers records, a whole 10M-event peers span); a larger span's rest is classified
 * during its COPY. Bounded by records alone, 720,000-event spans of the bench's memory workload held 200,000
 * records each and the replay peaked at 682 MB (215 s; 279 MB and 150 s at 50,000 records); with this bound
 * as well, on the worker, 434 MB (BENCHMARKS.md "Issue 30, round nine").
 */
export const SPAN_IN_MEMORY = 200_000;
export const SPAN_IN_MEMORY_CHARS = 12 * 2 ** 20;

/**
 * Whether a span's rows are summarized as they are classified, for its micro-batch (src/core/spanSummary.ts): the
 * batch's limit, or undefined where the summary would never stand for the read: where the batches do not aggregate
 * their on-time pairs (`aggregatesOnTime`).
 */
export const summarizeFor = (pipeline: PipelineConfig): number | undefined =>
  aggregatesOnTime(pipeline) ? pipeline.trigger.maxRowsPerBatch : undefined;

/** One span classified, with what its landing needs. */
export interface NextSpan {
  /** The span's landing source, `<prefix>:<span start as ISO 8601 UTC>` (or `:no-arrival-time`). */
  source: string;
  /** Ingestion time of its records that carry none, epoch ms: the end of the span. */
  landingTimeMs: number;
  classified: ClassifiedLines;
  /** Records read so far, this span's included. */
  rowsDone: number;
}

/** The spans of a replay in arrival order. */
export interface SpanSource {
  /**
   * The next span, or undefined when every record is read. Call again only once the span returned has been
   * read whole (its `classified.rest` too, when not null).
   * @throws what reading the records throws
   */
  next(): Promise<NextSpan | undefined>;
  /** Stops reading (nothing more is asked of it); never throws. */
  close(): Promise<void>;
}

/** How the records are cut into spans and named. */
export interface SpanNaming {
  /** Span of arrival time, ms. */
  spanMs: number;
  /** The landing sources' prefix, `replay:<dataset>`. */
  sourcePrefix: string;
  /** When the replay started, epoch ms: the landing time of records without an arrival time. */
  started: number;
}

/** The error of a replay whose file changed between its check and its landing: `what` differs from what was checked. */
export const fileChanged = (file: string, what: string): Error =>
  new Error(`${file} changed while it was replayed (${what}); run the replay again`);

/** The span a record's arrival falls in: its start, epoch ms, or null for a record without one. */
export const spanStartOf = (arrivalMs: number | null, spanMs: number): number | null =>
  arrivalMs === null ? null : Math.floor(arrivalMs / spanMs) * spanMs;

/** The source a span lands as and its records' landing time (records without one arrive at the end of their span). */
export function spanIdentity(start: number | null, naming: SpanNaming): { source: string; landingTimeMs: number } {
  const label = start === null ? "no-arrival-time" : new Date(start).toISOString();
  return {
    source: `${naming.sourcePrefix}:${label}`,
    landingTimeMs: start === null ? naming.started : start + naming.spanMs,
  };
}

/** A record as the landing reads it, from a staged (or in-order) row. */
function recordOf(r: ReplayRow): RawRecord {
  return r.fields === null
    ? { line: r.line, raw: r.raw, fields: null, parseError: r.parse_error ?? "not a record", origin: r.origin }
    : {
        line: r.line,
        raw: r.raw,
        fields: r.fields,
        origin: r.origin,
        ...(r.numbers === null ? {} : { numbers: r.numbers }),
      };
}

/**
 * The spans of `rows` (records in arrival order), each classified here when it is asked for.
 * @param elideRaw whether accepted rows may be written without their raw text (the CSV header is recorded with each span)
 */
export function spansOf(
  rows: RowSource,
  pipeline: PipelineConfig,
  naming: SpanNaming,
  elideRaw: () => boolean,
): SpanSource {
  let done = 0;
  return {
    async next() {
      const first = await rows.peek();
      if (first === undefined) return undefined;
      const current = spanStartOf(first.arrival_ms, naming.spanMs);
      async function* records(): AsyncGenerator<RawRecord> {
        for (;;) {
          const next = await rows.peek();
          if (next === undefined || spanStartOf(next.arrival_ms, naming.spanMs) !== current) return;
          done++;
          yield recordOf(rows.take());
        }
      }
      const { source, landingTimeMs } = spanIdentity(current, naming);
      // A span of more than SPAN_IN_MEMORY records keeps the rest to be read during its COPY.
      const classified = await classifyInMemory(
        pipeline,
        source,
        records(),
        { landingTimeMs, elideRaw, summarize: summarizeFor(pipeline) },
        SPAN_IN_MEMORY,
        SPAN_IN_MEMORY_CHARS,
      );
      return { source, landingTimeMs, classified, rowsDone: done };
    },
    async close() {},
  };
}
