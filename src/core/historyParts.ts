/**
 * What the histories of fixed-length windows and of sessions share (src/core/windowHistory.ts,
 * sessionHistory.ts): the late events a correction recovered, and the holds that kept a value
 * published. Pure; instants ISO 8601 UTC strings.
 */
import type {
  Aggregates,
  HistoryBatch,
  HistoryCorrection,
  HistoryEvent,
  HistoryHold,
  LateEvent,
  Revision,
} from "./historyTypes.js";
import { isoToUs } from "./instants.js";

/**
 * Finds the batch that read a `seq` (`startOffset < seq <= endOffset`) by bisection.
 * @param batches in offset order (as batch ids order them)
 * @returns a function from `seq` to the batch's index in `batches`, -1 for none
 */
export function batchIndex(batches: readonly HistoryBatch[]): (seq: number) => number {
  return (seq) => {
    let lo = 0,
      hi = batches.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const b = batches[mid]!;
      if (seq <= b.startOffset) hi = mid - 1;
      else if (seq > b.endOffset) lo = mid + 1;
      else return mid;
    }
    return -1;
  };
}

/**
 * The late events of a window: the rows a batch dropped (`fate(e).dropped`), and the rows no
 * batch read that a correction run took in (landed after the last batch). Each is recovered by
 * the first run whose audit names its event id and whose bronze snapshot reaches its `seq`.
 */
export function lateEventsOf(
  events: HistoryEvent[],
  corrections: HistoryCorrection[],
  fate: (e: HistoryEvent) => { dropped: boolean; read: boolean; batch?: HistoryBatch },
): LateEvent[] {
  const out: LateEvent[] = [];
  for (const e of events) {
    const f = fate(e);
    const run = corrections.find(
      (c) => c.lateEventIds.includes(e.eventId) && (c.bronzeSnapshot === null || c.bronzeSnapshot >= e.seq),
    );
    if (!f.dropped) {
      if (run === undefined || f.read) continue;
      if (e.supersededBy !== null && (run.bronzeSnapshot === null || e.supersededBy <= run.bronzeSnapshot)) continue;
    }
    out.push({
      seq: e.seq,
      eventId: e.eventId,
      eventTime: e.eventTime,
      ingestionTime: e.ingestionTime,
      landedAt: e.landedAt,
      value: e.value,
      latenessMs: Number((isoToUs(e.ingestionTime) - isoToUs(e.eventTime)) / 1000n),
      droppedInBatch: f.batch?.batchId ?? null,
      droppedAtWatermark: f.batch?.watermark ?? null,
      recoveredByRun: run?.runId ?? null,
    });
  }
  return out;
}

/**
 * Adds each hold that overlaps the window's life and its release: while held, the published
 * value stays what it was at the hold; the release publishes the value the window had then.
 */
export function applyHolds(entries: Revision[], holds: HistoryHold[], batches: HistoryBatch[]): Revision[] {
  if (entries.length === 0) return entries;
  const out: Revision[] = [];
  const marks: { us: bigint; order: number; hold: HistoryHold; release: boolean }[] = [];
  for (const h of holds) {
    // A rule's hold opens in the batch that tripped it, before its MERGE.
    const tripped = h.batchId === null ? undefined : batches.find((b) => b.batchId === h.batchId);
    marks.push({ us: tripped ? isoToUs(tripped.at) : isoToUs(h.heldAt), order: 0, hold: h, release: false });
    if (h.releasedAt !== null) marks.push({ us: isoToUs(h.releasedAt), order: 2, hold: h, release: true });
  }
  marks.sort((a, b) => (a.us === b.us ? a.order - b.order : Number(a.us - b.us)));
  let held: { hold: HistoryHold; value: Aggregates | null } | undefined;
  let current: Revision | undefined;
  let m = 0;
  const flush = (untilUs: bigint | null, order: number) => {
    while (
      m < marks.length &&
      (untilUs === null || marks[m]!.us < untilUs || (marks[m]!.us === untilUs && marks[m]!.order < order))
    ) {
      const mk = marks[m++]!;
      if (!mk.release && current !== undefined) {
        held = { hold: mk.hold, value: current.after };
        out.push({
          at: mk.hold.heldAt,
          before: current.after,
          after: current.after,
          status: current.status,
          revision: current.revision,
          published: true,
          cause: { kind: "hold", holdId: mk.hold.holdId, reason: mk.hold.reason, rule: mk.hold.rule },
        });
      } else if (!mk.release && current === undefined) {
        held = { hold: mk.hold, value: null };
      } else if (mk.release && held?.hold.holdId === mk.hold.holdId) {
        if (current !== undefined) {
          out.push({
            at: mk.hold.releasedAt!,
            before: held.value,
            after: current.after,
            status: current.status,
            revision: current.revision,
            published: true,
            cause: { kind: "release", holdId: mk.hold.holdId },
          });
        }
        held = undefined;
      }
    }
  };
  for (const e of entries) {
    flush(isoToUs(e.at), 1);
    if (held !== undefined) e.published = false;
    out.push(e);
    current = e;
  }
  flush(null, 1);
  return out;
}
