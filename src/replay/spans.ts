/**
 * The replay's landing loop: reads the records in arrival order span by span, classifies the next span
 * while this one lands, lands each as its own source and streams it while the next one lands.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import { flushCommits } from "../db/sql/ingest/commitWithoutFlushWait.js";
import { readLandedPrefix } from "../db/sql/ingest/readLandedPrefix.js";
import { landRecords } from "../ingest/copyToBronze.js";
import { LandedIds } from "../ingest/landedIds.js";
import type { LandResult } from "../ingest/landAnswer.js";
import { refreshPipelineEstimate, refreshResultsEstimate } from "../db/statistics.js";
import { DEFAULT_INPUT } from "../core/watermark.js";
import type { LandedSpan } from "../db/sql/stream/feedBatch.js";
import { runBatch, type BatchProgress } from "../stream/runBatch.js";
import type { NextSpan, SpanSource } from "./spanSource.js";
import type { ReplayOptions } from "./types.js";

/**
 * Whether the replay checks the pipeline's estimates (its bronze rows, its windows) after its `spans`-th span
 * (1-based): at spans 1, 2, 4, … 64, then every 100. Only those estimates: a table-wide ANALYZE of bronze every
 * 100 spans took a fifth of the taxi replay; the tables are refreshed once, at the end. Checked first at span
 * 100, a replay into a fresh database MERGEd its first 100 spans by hashing every window of the pipeline (the
 * results estimated at a handful of rows): 15-20 ms a span more on the peers workload (600 windows a span).
 */
export const estimatesDue = (spans: number): boolean =>
  spans > 0 && (spans % 100 === 0 || (spans < 100 && (spans & (spans - 1)) === 0));

/**
 * Takes the spans from `spans` in arrival order (classified, src/replay/spanSource.ts); lands each as its
 * source (`<prefix>:<span start>`) and runs the stream until the span's rows are consumed, while the next
 * span lands. Closes `spans` when it is done or fails.
 * @param total the records of the dataset (progress)
 * @returns the spans landed and skipped (landed before), the stream's batches, the rows landed and those of them quarantined DUPLICATE
 */
export async function replaySpans(
  pool: Pool,
  spans: SpanSource,
  pipeline: PipelineConfig,
  sourcePrefix: string,
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
  let replayBatches = 0,
    skipped = 0,
    streamBatches = 0,
    rowsLanded = 0,
    duplicateRows = 0;
  // No WAL flush per span: the landings and the micro-batches commit without waiting for theirs, and the replay
  // waits once, at its end (flushCommits), for all of them. A crash of the server before that may undo the last
  // fraction of a second of commits, whole and in commit order (the landing of a span not streamed, a span's batch
  // with the landings after it): a resumed replay lands what was undone again and streams from the checkpoint.
  // Not with a change feed: its ids come from a sequence, which a crash may hand out again after a consumer
  // applied them, so each of its batches waits for its flush.
  const deferFlush = !pipeline.feed.enabled;
  /** Streams one span's rows: micro-batches up to its last `seq` (no extra empty batch per span). */
  const streamSpan = async (land: LandResult, rowsDone: number, spans: number, landed: LandedSpan | undefined) => {
    const batches: BatchProgress[] = [];
    for (;;) {
      // The span's first batch may take its input from the span's summary (src/stream/batchInput.ts says when).
      const opts = land.lastSeq === null ? {} : { untilSeq: land.lastSeq, ...(batches.length === 0 ? { landed } : {}) };
      const b = await runBatch(pool, pipeline, "replay", { ...opts, commitWithoutFlushWait: deferFlush });
      if (b === null) break;
      batches.push(b);
      if (land.lastSeq !== null && b.endOffset >= land.lastSeq) break;
    }
    streamBatches += batches.length;
    if (estimatesDue(spans)) {
      await refreshPipelineEstimate(pool, pipeline.name);
      await refreshResultsEstimate(pool, pipeline.name);
    }
    opts.onBatch?.({ rowsDone, rowsTotal: total, land, batches });
  };
  // The previous span's stream runs while this span lands (on other connections): each
  // span's micro-batches read only its rows (untilSeq), as when they ran one after the other.
  let streaming: Promise<void> | undefined;
  // The ids this replay lands, so that a span's landing can skip the probe of bronze's event-id index (landedIds.ts).
  const landedIds = new LandedIds(total);
  // The spans an earlier run of this replay landed (a resumed replay skips them).
  const landedBefore = await readLandedPrefix(pool, pipeline.name, `${sourcePrefix}:`);
  /** Lands a classified span and starts its stream once the previous span's stream is done. */
  const landSpan = async (next: NextSpan) => {
    // The span's landing commits without waiting for its WAL flush (see deferFlush); a crash before a later
    // flush may undo it: its source is then not recorded, and a resumed replay lands it again. A span not landed when the replay started is new: its landing skips the two look-ups of an
    // earlier landing (one before the append lock, one under it). Landed meanwhile by another
    // replay, its record's unique key still refuses it, and the landing answers as landed before.
    let landed: LandedSpan | undefined;
    const land = await landRecords(pool, pipeline, next.source, next.classified, {
      // A span of several pieces has its tally, and with it its summary, once its COPY has read them all.
      onRowsAsClassified: (range) => {
        const summary = next.classified.tally.summary;
        if (summary !== null) landed = { summary, ...range, input: DEFAULT_INPUT }; // a replay lands its spans as the default input
      },
      landingTimeMs: next.landingTimeMs,
      csvHeader: () => csvHeader,
      commitWithoutFlushWait: true,
      newSource: !landedBefore.has(next.source),
      landedIds,
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
    streaming = streamSpan(land, next.rowsDone, replayBatches + skipped, land.alreadyLanded ? undefined : landed);
    // Awaited at the next span or below; a failure meanwhile is not unhandled.
    streaming.catch(() => undefined);
  };
  // The next span is classified while this one lands (the landing waits on the server) and
  // while the one before streams.
  let landing: Promise<void> | undefined,
    flushed = false;
  try {
    for (;;) {
      // A span held whole in memory is classified while the previous one lands; a larger one's rest
      // is read during its own COPY, so it waits for the previous landing first.
      const next = await spans.next();
      await landing;
      if (next === undefined) break;
      landing = landSpan(next);
      landing.catch(() => undefined); // awaited above at the next span; a failure meanwhile is not unhandled
      if (next.classified.rest !== null) await landing;
    }
    await streaming;
    await flushCommits(pool);
    flushed = true;
  } finally {
    // A landing that failed leaves no micro-batch running behind it.
    await landing?.catch(() => undefined);
    await streaming?.catch(() => undefined);
    await spans.close();
    // What a failed replay landed and streamed is on disk too when it answers (the flush's own failure is not its error).
    if (!flushed) await flushCommits(pool).catch(() => undefined);
  }
  return { replayBatches, skippedBatches: skipped, streamBatches, rowsLanded, duplicateRows };
}
