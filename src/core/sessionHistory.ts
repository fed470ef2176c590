/**
 * The history of one session (DESIGN "Session windows"), replayed from what the tables record:
 * the key's bronze rows in the session's span with the micro-batch that read each, run through
 * the stream's rules batch by batch (an event is late when `t + gap` is at or before the
 * watermark of earlier batches, or when its own window touches a final session; on-time events
 * and the key's open sessions merge into islands; a session ending at or before the watermark
 * after the batch is final), and the correction audit (each run's new sessions and the ones it
 * removed). A revision is any change of a session overlapping the explained one: created,
 * updated, extended, merged, finalized, corrected or split. Pure; instants ISO 8601 UTC.
 */
import { mergeTouching, sessionsTouch, gapUs, type SessionBounds } from "./sessions.js";
import { formatInstant, isoToUs } from "./instants.js";
import { aggregate } from "./exactAggregate.js";
import { applyHolds, batchIndex, lateEventsOf } from "./historyParts.js";
import type {
  Aggregates,
  HistoryBatch,
  HistoryCorrection,
  HistoryEvent,
  HistoryHold,
  LateEvent,
  Revision,
} from "./historyTypes.js";

export interface SessionHistoryInput {
  gapMs: number;
  /** The explained session as it is now. */
  target: { start: string; end: string };
  /** The key's accepted rows in the span of the session and of every session a correction replaced around it. */
  events: HistoryEvent[];
  batches: HistoryBatch[];
  /** Audit rows of the key's sessions overlapping the span, with `windowStart`/`windowEnd`. */
  corrections: (HistoryCorrection & { windowStart: string; windowEnd: string })[];
  holds: HistoryHold[];
}

interface Stored extends SessionBounds {
  seqs: Set<number>;
  final: boolean;
  revision: number;
}

type Related = Aggregates & { start: string; end: string };

export interface SessionHistory {
  revisions: Revision[];
  lateEvents: LateEvent[];
  /** Every session overlapping the explained one that was replaced (merged into another, or split), with its last value. */
  merged: Related[];
}

const bounds = (s: SessionBounds) => ({ start: formatInstant(s.startUs), end: formatInstant(s.endUs) });

/** Replays the session's history (see the module). */
export function sessionHistory(input: SessionHistoryInput): SessionHistory {
  const gap = gapUs(input.gapMs);
  const target: SessionBounds = { startUs: isoToUs(input.target.start), endUs: isoToUs(input.target.end) };
  const bySeq = new Map(input.events.map((e) => [e.seq, e]));
  const eventUs = new Map(input.events.map((e) => [e.seq, isoToUs(e.eventTime)]));
  const us = (e: HistoryEvent) => eventUs.get(e.seq)!;
  const aggOf = (s: Stored) => aggregate([...s.seqs].sort((a, b) => a - b).map((q) => bySeq.get(q)!.value));
  const related = (s: Stored): Related => ({ ...bounds(s), ...aggOf(s) });
  const overlapsTarget = (s: SessionBounds) => s.startUs < target.endUs && s.endUs > target.startUs;
  let stored: Stored[] = [];
  const revisions: Revision[] = [];
  const merged: Related[] = [];
  const dropped = new Map<number, HistoryBatch>();
  // The watermark after the last batch replayed: a correction writes a session final only when it ends at or before it.
  let watermarkUs: bigint | null = null;

  const steps: { at: bigint; order: number; batch?: HistoryBatch; runId?: number }[] = [
    ...input.batches.map((b) => ({ at: isoToUs(b.at), order: 0, batch: b })),
    ...[...new Set(input.corrections.map((c) => c.runId))].map((runId) => ({
      at: isoToUs(input.corrections.find((c) => c.runId === runId)!.correctedAt),
      order: 1,
      runId,
    })),
  ];
  steps.sort((a, b) => (a.at === b.at ? a.order - b.order : Number(a.at - b.at)));
  const indexOf = batchIndex(input.batches);
  const byBatch = new Map<HistoryBatch, HistoryEvent[]>();
  for (const e of input.events) {
    const b = input.batches[indexOf(e.seq)];
    if (b !== undefined) (byBatch.get(b) ?? byBatch.set(b, []).get(b)!).push(e);
  }

  for (const step of steps) {
    if (step.batch !== undefined) {
      const b = step.batch;
      const wm = b.watermark === null ? null : isoToUs(b.watermark);
      const nextWm = b.nextWatermark === null ? null : isoToUs(b.nextWatermark);
      watermarkUs = nextWm;
      const onTime: HistoryEvent[] = [];
      for (const e of [...(byBatch.get(b) ?? [])].sort((x, y) => Number(us(x) - us(y)))) {
        const own = { startUs: us(e), endUs: us(e) + gap };
        const late = (wm !== null && own.endUs <= wm) || stored.some((s) => s.final && sessionsTouch(s, own));
        if (late) dropped.set(e.seq, b);
        else onTime.push(e);
      }
      const changed: { after: Stored; before: Stored[] }[] = [];
      if (onTime.length > 0) {
        const open = stored.filter((s) => !s.final);
        const islands = mergeTouching([...open, ...onTime.map((e) => ({ startUs: us(e), endUs: us(e) + gap }))]);
        for (const isl of islands) {
          const mine = onTime.filter((e) => us(e) >= isl.startUs && us(e) < isl.endUs);
          if (mine.length === 0) continue;
          const inside = open.filter((s) => s.startUs >= isl.startUs && s.endUs <= isl.endUs);
          const same =
            inside.length === 1 && inside[0]!.startUs === isl.startUs && inside[0]!.endUs === isl.endUs
              ? inside[0]
              : undefined;
          const before = inside.map((s) => ({ ...s, seqs: new Set(s.seqs) }));
          if (same !== undefined) {
            for (const e of mine) same.seqs.add(e.seq);
            changed.push({ after: same, before });
          } else {
            const made: Stored = {
              ...isl,
              seqs: new Set([...inside.flatMap((s) => [...s.seqs]), ...mine.map((e) => e.seq)]),
              final: false,
              revision: Math.max(1, ...inside.map((s) => s.revision)),
            };
            stored = [...stored.filter((s) => !inside.includes(s)), made];
            changed.push({ after: made, before });
          }
        }
      }
      const finalized: Stored[] = [];
      for (const s of stored)
        if (!s.final && nextWm !== null && s.endUs <= nextWm) {
          s.final = true;
          finalized.push(s);
        }
      for (const c of changed) {
        if (!overlapsTarget(c.after)) continue;
        const same =
          c.before.length === 1 && c.before[0]!.startUs === c.after.startUs && c.before[0]!.endUs === c.after.endUs;
        if (!same) merged.push(...c.before.filter(overlapsTarget).map(related));
        revisions.push({
          at: b.at,
          before: same ? aggOf(c.before[0]!) : null,
          after: aggOf(c.after),
          status: c.after.final ? "final" : "open",
          revision: c.after.revision,
          published: true,
          window: bounds(c.after),
          ...(same || c.before.length === 0 ? {} : { replaced: c.before.map(related) }),
          cause: {
            kind: "micro-batch",
            batchId: b.batchId,
            watermark: b.watermark,
            watermarkAfter: b.nextWatermark,
            eventsAdded: onTime.filter((e) => us(e) >= c.after.startUs && us(e) < c.after.endUs).length,
            amended: [],
          },
        });
      }
      for (const s of finalized) {
        if (!overlapsTarget(s) || changed.some((c) => c.after === s)) continue;
        const a = aggOf(s);
        revisions.push({
          at: b.at,
          before: a,
          after: a,
          status: "final",
          revision: s.revision,
          published: true,
          window: bounds(s),
          cause: {
            kind: "micro-batch",
            batchId: b.batchId,
            watermark: b.watermark,
            watermarkAfter: b.nextWatermark,
            eventsAdded: 0,
            amended: [],
          },
        });
      }
    } else {
      const rows = input.corrections.filter((c) => c.runId === step.runId);
      const snapshot = rows[0]!.bronzeSnapshot ?? Number.MAX_SAFE_INTEGER;
      for (const c of rows.filter((r) => r.after.count > 0)) {
        const nb = { startUs: isoToUs(c.windowStart), endUs: isoToUs(c.windowEnd) };
        const inside = stored.filter((s) => s.startUs < nb.endUs && s.endUs > nb.startUs);
        const made: Stored = {
          ...nb,
          final: watermarkUs !== null && nb.endUs <= watermarkUs,
          revision: c.revisionAfter,
          seqs: new Set(
            input.events.filter((e) => e.seq <= snapshot && us(e) >= nb.startUs && us(e) < nb.endUs).map((e) => e.seq),
          ),
        };
        stored = [...stored.filter((s) => !inside.includes(s)), made];
        if (!overlapsTarget(nb)) continue;
        // What the run removed around it, as its audit says (every stored session whose bounds are gone, with its value):
        // the sessions it merged, or the one it split.
        const removed: Related[] = rows
          .filter(
            (r) =>
              r.after.count === 0 &&
              r.before !== null &&
              isoToUs(r.windowStart) < nb.endUs &&
              isoToUs(r.windowEnd) > nb.startUs,
          )
          .map((r) => ({ start: r.windowStart, end: r.windowEnd, ...r.before! }));
        merged.push(...removed);
        revisions.push({
          at: c.correctedAt,
          before: c.before,
          after: c.after,
          status: "corrected",
          revision: c.revisionAfter,
          published: true,
          window: bounds(made),
          ...(removed.length === 0 ? {} : { replaced: removed }),
          cause: {
            kind: "correction",
            runId: c.runId,
            trigger: c.trigger,
            cronSlot: c.cronSlot,
            reconcileRunId: c.reconcileRunId,
            lateEvents: c.lateEventIds,
            amended: [],
          },
        });
      }
      for (const c of rows.filter((r) => r.after.count === 0)) {
        const gone = stored.find(
          (s) => formatInstant(s.startUs) === c.windowStart && formatInstant(s.endUs) === c.windowEnd,
        );
        if (gone !== undefined) stored = stored.filter((s) => s !== gone);
      }
    }
  }

  const read = new Set(input.events.filter((e) => indexOf(e.seq) >= 0).map((e) => e.seq));
  const lateEvents = lateEventsOf(input.events, input.corrections, (e) => {
    const b = dropped.get(e.seq);
    return b === undefined ? { dropped: false, read: read.has(e.seq) } : { dropped: true, read: true, batch: b };
  });
  const seen = new Set<string>();
  const uniqueMerged = merged.filter((m) => {
    const k = `${m.start}|${m.end}|${m.count}|${m.sum}`;
    return seen.has(k) ? false : (seen.add(k), true);
  });
  return { revisions: applyHolds(revisions, input.holds, input.batches), lateEvents, merged: uniqueMerged };
}
