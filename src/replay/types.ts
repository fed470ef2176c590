/**
 * What a replay is asked (its files, arrival-time field, span and progress callbacks) and what it
 * answers (src/replay/replay.ts runs it).
 */
import type { LandResult } from "../ingest/landAnswer.js";
import type { BatchProgress } from "../stream/runBatch.js";

/**
 * What a dataset may hold to be sorted in memory (src/replay/ordering.ts): records, and characters (UTF-16 code
 * units) of their raw text. A taxi trip record (about 190 B of CSV, 18 fields) takes about 1 kB of memory once read.
 */
export interface MemoryBudget {
  rows: number;
  bytes: number;
}

export interface ReplayOptions {
  files: string[];
  arrivalField: string;
  /** Span of arrival time per micro-batch, ms. */
  batchSpanMs: number;
  /**
   * Rows read so far before the first micro-batch: checked to be in arrival order in the file (`file`), read to be
   * sorted in memory (`memory`), or staged in the temporary table (`table`).
   */
  onStaged?: (rows: number, how: "file" | "memory" | "table") => void;
  /**
   * One file in arrival order of at least this many bytes is read and classified on a worker thread while this
   * one lands and streams (default 4 MiB; src/replay/workerSpans.ts); a smaller one here.
   */
  workerFromBytes?: number;
  /** `false`: the check pass makes every record even where it could read the file on bytes (src/replay/fastCheck.ts); for tests. */
  checkOnBytes?: boolean;
  /** What a dataset not in arrival order may hold to be sorted in memory rather than staged (default `MEMORY_BUDGET`, src/replay/ordering.ts). */
  memoryBudget?: MemoryBudget;
  /** A file left out: its header is refused (src/ingest/csvRecords.ts). */
  onRefused?: (file: string, reason: string) => void;
  onBatch?: (info: { rowsDone: number; rowsTotal: number; land: LandResult; batches: BatchProgress[] }) => void;
}

export interface ReplaySummary {
  rowsStaged: number;
  /** True when the dataset was staged in a temporary table; false when it was read straight from the file (one file already in arrival order) or sorted in memory. */
  staged: boolean;
  /** Where the records were put in arrival order: `file` (they were, in one file), `memory` or `table` (the staging table); `file` for a replay that landed nothing because it completed before. */
  ordered: "file" | "memory" | "table";
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
