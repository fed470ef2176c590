/**
 * What a replay is asked (its files, arrival-time field, span and progress callbacks) and what it
 * answers (src/replay/replay.ts runs it).
 */
import type { LandResult } from "../ingest/landAnswer.js";
import type { BatchProgress } from "../stream/runBatch.js";

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
