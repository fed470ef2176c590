/**
 * Replay: lands a dataset in the order of an arrival-time column, in
 * micro-batches that each span `batchSpan` of arrival time, and runs the
 * stream after each one — what the pipeline would have seen live.
 *
 * A dataset small enough (`MEMORY_BUDGET`: 200,000 records) is read whole and
 * sorted in arrival order in memory. A larger one is COPYed into a
 * session-temporary table with each row's arrival instant (memory stays flat
 * whatever the dataset's size), then read back in arrival order a page at a
 * time, each page a statement of its own: no snapshot stays open for the
 * replay's length (src/replay/ordering.ts). One file whose records are already
 * in arrival order is neither: it is read twice, a check and then the landing
 * (`inArrivalOrder`).
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
 *
 * Its parts: the records in arrival order (src/replay/ordering.ts: sorted in memory or staged;
 * src/replay/rowSource.ts: one file already in order), the landing loop span by span
 * (src/replay/spans.ts), the dataset known again (src/replay/completion.ts).
 */
import { stat } from "node:fs/promises";
import path from "node:path";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import { recordReplayedFile } from "../db/sql/ingest/recordReplayedFile.js";
import { recordReplayCompletion } from "../db/sql/ingest/replayCompletion.js";
import { dropReplayRows } from "../db/sql/ingest/stageReplayRows.js";
import { analyzeAfterLoad } from "../db/statistics.js";
import {
  completedBefore,
  contentHash,
  datasetId,
  landedBeforeMessage,
  replayFilesProblem,
  statFingerprint,
} from "./completion.js";
import { orderDataset } from "./ordering.js";
import { inArrivalOrder } from "./rowSource.js";
import { spansOf } from "./spanSource.js";
import { replaySpans } from "./spans.js";
import type { ReplayOptions, ReplaySummary } from "./types.js";

export { replayFilesProblem };
export type { ReplayOptions, ReplaySummary };

/**
 * The replay summary's plain words for rows that were already in bronze, or null when there were none.
 * @param duplicateRows rows this replay landed that were quarantined DUPLICATE
 * @param rowsLanded rows this replay landed
 */
function alreadyLandedMessage(pipeline: string, duplicateRows: number, rowsLanded: number): string | null {
  if (duplicateRows === 0) return null;
  return `${duplicateRows} of ${rowsLanded} rows were already in bronze (DUPLICATE): this data was landed before; to replay from scratch, \`straggler drop -p ${pipeline} --yes\` first`;
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
      ordered: "file",
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
    // One file already in arrival order is read straight from the file; any other dataset is sorted
    // in memory when it fits the budget, else staged.
    const naming = { spanMs: opts.batchSpanMs, sourcePrefix: `replay:${id}`, started };
    const direct = await inArrivalOrder(pipeline, opts, headers, naming);
    const ordered =
      direct === null
        ? await orderDataset(client, pipeline, opts, refused, headers)
        : { ...direct, how: "file" as const };
    const total = ordered.total;
    const csvHeader = headers.size === 1 ? [...headers][0] : undefined;
    const spans =
      "spans" in ordered ? ordered.spans : spansOf(ordered.rows, pipeline, naming, () => csvHeader !== undefined);
    // Pages are read on the staging session; landings and batches run on other connections.
    const counts = await replaySpans(pool, spans, pipeline, naming.sourcePrefix, total, opts, csvHeader);
    await analyzeAfterLoad(pool, pipeline.name);
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
      staged: ordered.how === "table",
      ordered: ordered.how,
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
