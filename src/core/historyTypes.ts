/**
 * The shapes of a window's history (src/core/windowHistory.ts, sessionHistory.ts): what the
 * tables record, given to the pure functions, and the revisions and late events they give.
 * Instants are ISO 8601 UTC strings, values numeric strings.
 */

/** A window's aggregates; `count` 0 and nulls for no row. */
export interface Aggregates {
  count: number;
  sum: string | null;
  min: string | null;
  max: string | null;
}

/** An accepted bronze row of the window and the batch that read it (null: landed after the last batch). */
export interface HistoryEvent {
  seq: number;
  eventId: string;
  eventTime: string;
  ingestionTime: string;
  landedAt: string;
  value: string | null;
  supersededBy: number | null;
}

/** One micro-batch: its bronze range `startOffset < seq <= endOffset` and its watermarks. */
export interface HistoryBatch {
  batchId: number;
  startOffset: number;
  endOffset: number;
  /** The watermark of earlier batches, which the late rule used (null: none yet). */
  watermark: string | null;
  /** The watermark after the batch, which finalized windows. */
  nextWatermark: string | null;
  at: string;
}

export interface HistoryCorrection {
  runId: number;
  trigger: string;
  cronSlot: string | null;
  bronzeSnapshot: number | null;
  revisionBefore: number | null;
  revisionAfter: number;
  before: Aggregates | null;
  after: Aggregates;
  lateEventIds: string[];
  correctedAt: string;
  reconcileRunId: number | null;
}

export interface HistoryHold {
  holdId: number;
  reason: string;
  rule: string | null;
  batchId: number | null;
  heldAt: string;
  releasedAt: string | null;
}

export interface HistoryCutover {
  version: number;
  previousVersion: number;
  liveSince: string;
  /** The window in the version it replaced, as the cutover stored it; null: it had none. */
  previous: Aggregates | null;
}

/** A late event: a row read by a batch after the window was final, with what recovered it. */
export interface LateEvent extends Omit<HistoryEvent, "supersededBy"> {
  /** Lateness as the lateness report measures it: ingestion time − event time, ms. */
  latenessMs: number;
  /** The batch that dropped it and the watermark its late rule used; null: not yet read by a batch. */
  droppedInBatch: number | null;
  droppedAtWatermark: string | null;
  /** The correction run that recovered it; null: awaiting correction. */
  recoveredByRun: number | null;
}

/** What made a revision. */
type RevisionCause =
  | {
      kind: "micro-batch";
      batchId: number;
      watermark: string | null;
      watermarkAfter: string | null;
      eventsAdded: number;
      amended: string[];
    }
  | {
      kind: "correction";
      runId: number;
      trigger: string;
      cronSlot: string | null;
      reconcileRunId: number | null;
      lateEvents: string[];
      amended: string[];
    }
  | { kind: "cutover"; version: number; previousVersion: number }
  | { kind: "hold"; holdId: number; reason: string; rule: string | null }
  | { kind: "release"; holdId: number };

export type RevisionStatus = "open" | "final" | "corrected";

export interface Revision {
  at: string;
  cause: RevisionCause;
  before: Aggregates | null;
  after: Aggregates | null;
  status: RevisionStatus;
  /** The results row's revision after it (the stream keeps 1; a correction raises it). */
  revision: number;
  /** False while a hold kept the published value (the revision was published at the release). */
  published: boolean;
  /** Sessions: the session's bounds after the revision. */
  window?: { start: string; end: string };
  /** Sessions: the sessions of the key it replaced (merged, or the one it was split from), with their values. */
  replaced?: (Aggregates & { start: string; end: string })[];
}
