/**
 * The history of one window (`straggler explain`, GET /pipelines/{p}/windows/history): every
 * revision in order, rebuilt from what the tables record — the bronze rows of the window with
 * the micro-batch that read each (DESIGN §2–6: while the window is open a batch adds its
 * rows, the batch whose watermark after it reaches the end finalizes it, a row read later is
 * late and dropped), the correction audit (before and after, the late events), holds (what
 * stayed published) and the last cutover. Pure: the database reads are src/observe/explain.ts.
 * Instants are ISO 8601 UTC strings (compared as epoch µs), values numeric strings, summed
 * exactly (a numeric's scale is the largest of its terms', as PostgreSQL's `sum`).
 */
import { RunningAggregate } from "./exactAggregate.js";
import { applyHolds, batchIndex, lateEventsOf } from "./historyParts.js";
import type {
  Aggregates,
  HistoryBatch,
  HistoryCorrection,
  HistoryCutover,
  HistoryEvent,
  HistoryHold,
  LateEvent,
  Revision,
  RevisionStatus,
} from "./historyTypes.js";
import { isoToUs } from "./instants.js";

export type * from "./historyTypes.js";

export interface WindowHistoryInput {
  windowEnd: string;
  events: HistoryEvent[];
  batches: HistoryBatch[];
  corrections: HistoryCorrection[];
  holds: HistoryHold[];
  cutover: HistoryCutover | undefined;
  /** The window as it is now (null: no row): the cutover's value when nothing changed it since. */
  now: Aggregates | null;
  /** The window's status now (the cutover's status when nothing changed it since). */
  nowStatus?: RevisionStatus;
}

export interface WindowHistory {
  revisions: Revision[];
  lateEvents: LateEvent[];
}

const usOf = (iso: string | null) => (iso === null ? null : isoToUs(iso));

/** The stream's revisions of a fixed-length or calendar window, and the batch that read each row. */
function streamRevisions(
  input: WindowHistoryInput,
  since: { at: string; seq: number } | undefined,
): { revisions: Revision[]; batchOf: Map<number, HistoryBatch> } {
  const endUs = isoToUs(input.windowEnd);
  const batches = input.batches;
  const batchOf = new Map<number, HistoryBatch>();
  const indexOf = batchIndex(batches);
  const added = new Map<number, HistoryEvent[]>();
  const amended = new Map<number, HistoryEvent[]>();
  const push = (m: Map<number, HistoryEvent[]>, i: number, e: HistoryEvent) =>
    (m.get(i) ?? m.set(i, []).get(i)!).push(e);
  for (const e of input.events) {
    const i = indexOf(e.seq);
    if (i >= 0) {
      batchOf.set(e.seq, batches[i]!);
      push(added, i, e);
    }
    if (e.supersededBy !== null && (since === undefined || e.supersededBy > since.seq)) {
      const j = indexOf(e.supersededBy);
      if (j >= 0) push(amended, j, e);
    }
  }
  const revisions: Revision[] = [];
  // After a cutover the window starts from the version's whole recompute of the rows up to its checkpoint.
  let live =
    since === undefined
      ? []
      : input.events.filter((e) => e.seq <= since.seq && !(e.supersededBy !== null && e.supersededBy <= since.seq));
  let running = new RunningAggregate();
  for (const e of live) running.add(e.value);
  let prev: Aggregates | null = live.length === 0 ? null : running.value();
  for (let i = 0; i < batches.length; i++) {
    const b = batches[i]!;
    const wm = usOf(b.watermark);
    if (since !== undefined && b.endOffset <= since.seq) continue;
    if (wm !== null && endUs <= wm) break; // final before this batch: the stream no longer writes it
    const nextWm = usOf(b.nextWatermark);
    const final = nextWm !== null && endUs <= nextWm;
    const rows = added.get(i) ?? [];
    const gone = amended.get(i) ?? [];
    if (rows.length === 0 && gone.length === 0 && !final) continue;
    live = gone.length === 0 ? [...live, ...rows] : [...live, ...rows].filter((e) => !gone.includes(e));
    if (gone.length === 0) for (const e of rows) running.add(e.value);
    else {
      running = new RunningAggregate();
      for (const e of live) running.add(e.value);
    }
    const after = live.length === 0 ? null : running.value();
    if (after === null && prev === null) continue;
    revisions.push({
      at: b.at,
      before: prev,
      after,
      status: final ? "final" : "open",
      revision: 1,
      published: true,
      cause: {
        kind: "micro-batch",
        batchId: b.batchId,
        watermark: b.watermark,
        watermarkAfter: b.nextWatermark,
        eventsAdded: rows.length,
        amended: gone.map((e) => e.eventId),
      },
    });
    prev = after;
  }
  return { revisions, batchOf };
}

/**
 * Every revision of a fixed-length or calendar window, oldest first, and its late events.
 * With a cutover, the micro-batches before it (another version's classification) are left
 * out: the cutover's revision shows the value it replaced.
 */
export function windowHistory(input: WindowHistoryInput): WindowHistory {
  const endUs = isoToUs(input.windowEnd);
  const cut = input.cutover;
  const cutUs = cut === undefined ? null : isoToUs(cut.liveSince);
  const firstAfterCut = cut === undefined ? undefined : input.batches.find((b) => isoToUs(b.at) > cutUs!);
  const since =
    cut === undefined ? undefined : { at: cut.liveSince, seq: firstAfterCut?.startOffset ?? Number.MAX_SAFE_INTEGER };
  const { revisions: stream, batchOf } = streamRevisions(input, since);

  const entries: Revision[] = [...stream];
  for (const c of input.corrections) {
    const prevSnapshot = Math.max(
      0,
      ...input.corrections.filter((o) => o.runId < c.runId).map((o) => o.bronzeSnapshot ?? 0),
    );
    // Versions superseded while the stream no longer wrote the window (after it was final): this run recomputed them.
    const byStream = (seq: number) => {
      const b = input.batches.find((x) => seq > x.startOffset && seq <= x.endOffset);
      const wm = b === undefined ? null : usOf(b.watermark);
      return b !== undefined && !(wm !== null && endUs <= wm);
    };
    const amended = input.events
      .filter(
        (e) =>
          e.supersededBy !== null &&
          e.supersededBy > prevSnapshot &&
          e.supersededBy <= (c.bronzeSnapshot ?? Infinity) &&
          !byStream(e.supersededBy),
      )
      .map((e) => e.eventId);
    entries.push({
      at: c.correctedAt,
      before: c.before,
      after: c.after.count === 0 ? null : c.after,
      status: "corrected",
      revision: c.revisionAfter,
      published: true,
      cause: {
        kind: "correction",
        runId: c.runId,
        trigger: c.trigger,
        cronSlot: c.cronSlot,
        reconcileRunId: c.reconcileRunId,
        lateEvents: c.lateEventIds,
        amended,
      },
    });
  }
  if (cut !== undefined) {
    entries.push({
      at: cut.liveSince,
      before: cut.previous,
      after: null,
      status: "final",
      revision: 1,
      published: true,
      cause: { kind: "cutover", version: cut.version, previousVersion: cut.previousVersion },
    });
  }
  entries.sort((a, b) => Number(isoToUs(a.at) - isoToUs(b.at)));
  if (cut !== undefined) {
    // The cutover's value is what the next revision found, or the window as it is now.
    const i = entries.findIndex((e) => e.cause.kind === "cutover");
    const next = entries[i + 1];
    entries[i]!.after = next ? next.before : input.now;
    entries[i]!.status = next
      ? next.cause.kind === "micro-batch"
        ? "open"
        : next.status
      : (input.nowStatus ?? "final");
    entries.splice(0, i, ...entries.slice(0, i).filter((e) => e.cause.kind !== "micro-batch"));
  }
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.cause.kind === "micro-batch" && i > 0) e.revision = entries[i - 1]!.revision;
    if (e.cause.kind === "cutover" && i > 0) e.revision = entries[i - 1]!.revision;
  }
  const withHolds = applyHolds(entries, input.holds, input.batches);

  const lateEvents = lateEventsOf(input.events, input.corrections, (e) => {
    if (since !== undefined && e.seq <= since.seq) return { dropped: false, read: true };
    const b = batchOf.get(e.seq);
    const wm = b ? usOf(b.watermark) : null;
    return b !== undefined && wm !== null && endUs <= wm
      ? { dropped: true, read: true, batch: b }
      : { dropped: false, read: b !== undefined };
  });
  return { revisions: withHolds, lateEvents };
}
