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
import { isoToUs } from "./timestamps.js";

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

export interface HistoryBatch {
  batchId: number;
  startOffset: number;
  endOffset: number;
  watermark: string | null;
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
export interface LateEvent {
  seq: number;
  eventId: string;
  eventTime: string;
  ingestionTime: string;
  landedAt: string;
  value: string | null;
  /** Lateness as the lateness report measures it: ingestion time − event time, ms. */
  latenessMs: number;
  /** The batch that dropped it and the watermark its late rule used; null: not yet read by a batch. */
  droppedInBatch: number | null;
  droppedAtWatermark: string | null;
  /** The correction run that recovered it; null: awaiting correction. */
  recoveredByRun: number | null;
}

/** What made a revision. */
export type RevisionCause =
  | { kind: "micro-batch"; batchId: number; watermark: string | null; watermarkAfter: string | null; eventsAdded: number; amended: string[] }
  | { kind: "correction"; runId: number; trigger: string; cronSlot: string | null; reconcileRunId: number | null; lateEvents: string[]; amended: string[] }
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

const scaleOf = (v: string) => (v.includes(".") ? v.length - v.indexOf(".") - 1 : 0);
const scaled = (v: string, scale: number) => BigInt((v.includes(".") ? v.replace(".", "") : v) + "0".repeat(scale - scaleOf(v)));

function formatScaled(n: bigint, scale: number): string {
  if (scale === 0) return n.toString();
  const neg = n < 0n;
  const digits = (neg ? -n : n).toString().padStart(scale + 1, "0");
  return `${neg ? "-" : ""}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** Count, exact sum, min and max of `values` (nulls counted, not summed), as the window's MERGE computes them. */
export function aggregate(values: readonly (string | null)[]): Aggregates {
  const nums = values.filter((v): v is string => v !== null);
  if (nums.length === 0) return { count: values.length, sum: null, min: null, max: null };
  const scale = Math.max(...nums.map(scaleOf));
  let sum = 0n;
  let min = nums[0]!;
  let max = nums[0]!;
  const cmp = (a: string, b: string) => {
    const s = Math.max(scaleOf(a), scaleOf(b));
    const d = scaled(a, s) - scaled(b, s);
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  };
  for (const v of nums) {
    sum += scaled(v, scale);
    if (cmp(v, min) < 0) min = v;
    if (cmp(v, max) > 0) max = v;
  }
  return { count: values.length, sum: formatScaled(sum, scale), min, max };
}


const usOf = (iso: string | null) => (iso === null ? null : isoToUs(iso));

/** The stream's revisions of a fixed-length or calendar window, and the batch that read each row. */
function streamRevisions(input: WindowHistoryInput, since: { at: string; seq: number } | undefined): { revisions: Revision[]; batchOf: Map<number, HistoryBatch> } {
  const endUs = isoToUs(input.windowEnd);
  const batchOf = new Map<number, HistoryBatch>();
  const revisions: Revision[] = [];
  // After a cutover the window starts from the version's whole recompute of the rows up to its checkpoint.
  const atCut = since === undefined ? [] : input.events.filter((e) => e.seq <= since.seq && !(e.supersededBy !== null && e.supersededBy <= since.seq));
  let prev: Aggregates | null = atCut.length === 0 ? null : aggregate(atCut.map((e) => e.value));
  const inBatch = (seq: number, b: HistoryBatch) => seq > b.startOffset && seq <= b.endOffset;
  for (const b of input.batches) {
    for (const e of input.events) if (inBatch(e.seq, b)) batchOf.set(e.seq, b);
    const wm = usOf(b.watermark);
    if (since !== undefined && b.endOffset <= since.seq) continue;
    if (wm !== null && endUs <= wm) continue; // final before this batch: the stream no longer writes it
    const live = input.events.filter((e) => e.seq <= b.endOffset && !(e.supersededBy !== null && e.supersededBy <= b.endOffset));
    const added = input.events.filter((e) => inBatch(e.seq, b));
    const amended = input.events.filter((e) => e.supersededBy !== null && inBatch(e.supersededBy, b)).map((e) => e.eventId);
    const nextWm = usOf(b.nextWatermark);
    const final = nextWm !== null && endUs <= nextWm;
    const after = live.length === 0 ? null : aggregate(live.map((e) => e.value));
    if (added.length === 0 && amended.length === 0 && !final) continue;
    if (after === null && prev === null) continue;
    revisions.push({
      at: b.at, before: prev, after, status: final ? "final" : "open", revision: 1, published: true,
      cause: { kind: "micro-batch", batchId: b.batchId, watermark: b.watermark, watermarkAfter: b.nextWatermark, eventsAdded: added.length, amended },
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
  const since = cut === undefined ? undefined : { at: cut.liveSince, seq: firstAfterCut?.startOffset ?? Number.MAX_SAFE_INTEGER };
  const { revisions: stream, batchOf } = streamRevisions(input, since);

  const entries: Revision[] = [...stream];
  for (const c of input.corrections) {
    const prevSnapshot = Math.max(0, ...input.corrections.filter((o) => o.runId < c.runId).map((o) => o.bronzeSnapshot ?? 0));
    // Versions superseded while the stream no longer wrote the window (after it was final): this run recomputed them.
    const byStream = (seq: number) => {
      const b = input.batches.find((x) => seq > x.startOffset && seq <= x.endOffset);
      const wm = b === undefined ? null : usOf(b.watermark);
      return b !== undefined && !(wm !== null && endUs <= wm);
    };
    const amended = input.events
      .filter((e) => e.supersededBy !== null && e.supersededBy > prevSnapshot && e.supersededBy <= (c.bronzeSnapshot ?? Infinity) && !byStream(e.supersededBy))
      .map((e) => e.eventId);
    entries.push({
      at: c.correctedAt, before: c.before, after: c.after.count === 0 ? null : c.after, status: "corrected", revision: c.revisionAfter, published: true,
      cause: { kind: "correction", runId: c.runId, trigger: c.trigger, cronSlot: c.cronSlot, reconcileRunId: c.reconcileRunId, lateEvents: c.lateEventIds, amended },
    });
  }
  if (cut !== undefined) {
    entries.push({ at: cut.liveSince, before: cut.previous, after: null, status: "final", revision: 1, published: true, cause: { kind: "cutover", version: cut.version, previousVersion: cut.previousVersion } });
  }
  entries.sort((a, b) => Number(isoToUs(a.at) - isoToUs(b.at)));
  if (cut !== undefined) {
    // The cutover's value is what the next revision found, or the window as it is now.
    const i = entries.findIndex((e) => e.cause.kind === "cutover");
    const next = entries[i + 1];
    entries[i]!.after = next ? next.before : input.now;
    entries[i]!.status = next ? (next.cause.kind === "micro-batch" ? "open" : next.status) : (input.nowStatus ?? "final");
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
    return b !== undefined && wm !== null && endUs <= wm ? { dropped: true, read: true, batch: b } : { dropped: false, read: b !== undefined };
  });
  return { revisions: withHolds, lateEvents };
}

/**
 * The late events of a window: the rows a batch dropped (`fate(e).dropped`), and the rows no
 * batch read that a correction run took in (landed after the last batch). Each is recovered by
 * the first run whose audit names its event id and whose bronze snapshot reaches its `seq`.
 */
export function lateEventsOf(
  events: HistoryEvent[], corrections: HistoryCorrection[],
  fate: (e: HistoryEvent) => { dropped: boolean; read: boolean; batch?: HistoryBatch },
): LateEvent[] {
  const out: LateEvent[] = [];
  for (const e of events) {
    const f = fate(e);
    const run = corrections.find((c) => c.lateEventIds.includes(e.eventId) && (c.bronzeSnapshot === null || c.bronzeSnapshot >= e.seq));
    if (!f.dropped) {
      if (run === undefined || f.read) continue;
      if (e.supersededBy !== null && (run.bronzeSnapshot === null || e.supersededBy <= run.bronzeSnapshot)) continue;
    }
    out.push({
      seq: e.seq, eventId: e.eventId, eventTime: e.eventTime, ingestionTime: e.ingestionTime, landedAt: e.landedAt, value: e.value,
      latenessMs: Number((isoToUs(e.ingestionTime) - isoToUs(e.eventTime)) / 1000n),
      droppedInBatch: f.batch?.batchId ?? null, droppedAtWatermark: f.batch?.watermark ?? null, recoveredByRun: run?.runId ?? null,
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
    while (m < marks.length && (untilUs === null || marks[m]!.us < untilUs || (marks[m]!.us === untilUs && marks[m]!.order < order))) {
      const mk = marks[m++]!;
      if (!mk.release && current !== undefined) {
        held = { hold: mk.hold, value: current.after };
        out.push({ at: mk.hold.heldAt, before: current.after, after: current.after, status: current.status, revision: current.revision, published: true, cause: { kind: "hold", holdId: mk.hold.holdId, reason: mk.hold.reason, rule: mk.hold.rule } });
      } else if (!mk.release && current === undefined) {
        held = { hold: mk.hold, value: null };
      } else if (mk.release && held?.hold.holdId === mk.hold.holdId) {
        if (current !== undefined) {
          out.push({ at: mk.hold.releasedAt!, before: held.value, after: current.after, status: current.status, revision: current.revision, published: true, cause: { kind: "release", holdId: mk.hold.holdId } });
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
