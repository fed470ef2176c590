/**
 * The reference: what the stream and the correction should answer, computed
 * from the pure core alone (window assignment from the kind's reference
 * function, `isLate` and `advanceWatermark` from src/core/watermark.ts) with
 * an exact decimal aggregator. No SQL, no clock.
 *
 * Observations have the shapes `realRun.ts` reads from PostgreSQL, so the two
 * compare with one `toEqual`.
 */
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { keyIn } from "../../src/core/keys.js";
import { formatInstant, isoToUs } from "../../src/core/instants.js";
import { advanceWatermark, isLate } from "../../src/core/watermark.js";
import type { WindowBounds } from "../../src/core/windows.js";
import type { BatchProgress } from "../../src/stream/runBatch.js";
import { kindOf } from "./windowKinds.js";

/** An accepted or quarantined input row: `id` is its event id, `seq` its arrival position. */
export interface Row {
  id: string;
  seq: number;
  key: string | null;
  us: bigint;
  value: string | null;
}

/** Count, sum, min and max of one window as PostgreSQL prints them (numeric texts). */
export interface Aggregate {
  count: number;
  sum: string | null;
  min: string | null;
  max: string | null;
}

/** A row of `straggler.window_results`, instants ISO. */
export interface WindowResult extends Aggregate {
  key: string | null;
  start: string;
  end: string;
  status: "open" | "final" | "corrected";
  revision: number;
}

/** A row of `straggler.late_events` (an event dropped from one window), by event id. */
export interface LatePair {
  id: string;
  key: string | null;
  start: string;
  end: string;
  batchId: number;
}

/** A row of `straggler.windows_awaiting_correction`. */
export interface LateWindow {
  key: string | null;
  start: string;
  end: string;
  droppedRows: number;
  firstBatchId: number;
  lastBatchId: number;
}

/** The parts of a batch's progress the rules decide; `watermark` is the one the batch used (`eventTime.watermark`). */
export const PROGRESS_FIELDS = [
  "batchId",
  "numInputRows",
  "numQuarantinedRows",
  "nextWatermark",
  "numRowsDroppedByWatermark",
  "numLateWindows",
  "numRowsUpdated",
  "numRowsFinalized",
  "numRowsTotal",
] as const;
export type Progress = Pick<BatchProgress, (typeof PROGRESS_FIELDS)[number]> & { watermark: string | null };

/** A correction run's summary, as far as the rules decide it. */
export interface Correction {
  windowsExamined: number;
  windowsChanged: number;
  eventsRecovered: number;
  changes: {
    groupKey: string | null;
    windowStart: string;
    windowEnd: string;
    before: Aggregate | null;
    after: Aggregate;
    revision: number;
    lateEventCount: number;
    lateEventIds: string[];
  }[];
}

/** Exact decimal: `units × 10^-scale`. */
interface Dec {
  units: bigint;
  scale: number;
}
const dec = (text: string): Dec => {
  const [whole, frac = ""] = text.split(".");
  return { units: BigInt(whole! + frac), scale: frac.length };
};
const rescale = (d: Dec, scale: number): bigint => d.units * 10n ** BigInt(scale - d.scale);
const add = (a: Dec, b: Dec): Dec => {
  const scale = Math.max(a.scale, b.scale);
  return { units: rescale(a, scale) + rescale(b, scale), scale };
};
const less = (a: Dec, b: Dec): boolean => {
  const scale = Math.max(a.scale, b.scale);
  return rescale(a, scale) < rescale(b, scale);
};
/** numeric's text: every digit of the scale, no sign on zero. */
function decText(d: Dec): string {
  const digits = (d.units < 0n ? -d.units : d.units).toString().padStart(d.scale + 1, "0");
  const whole = digits.slice(0, digits.length - d.scale),
    frac = digits.slice(digits.length - d.scale);
  return `${d.units < 0n ? "-" : ""}${whole}${d.scale > 0 ? "." + frac : ""}`;
}

/** count/sum/min/max of values (generated values are unique texts per value, so min and max are the inputs' texts). */
export function aggregate(values: string[]): Aggregate {
  if (values.length === 0) return { count: 0, sum: null, min: null, max: null };
  const ds = values.map(dec);
  const pick = (better: (a: Dec, b: Dec) => boolean) =>
    values[ds.reduce((bi, d, i) => (better(d, ds[bi]!) ? i : bi), 0)]!;
  return { count: values.length, sum: decText(ds.reduce(add)), min: pick(less), max: pick((a, b) => less(b, a)) };
}

interface State {
  key: string | null;
  window: WindowBounds;
  values: string[];
  final: boolean;
  corrected: boolean;
  revision: number;
}

const id = (key: string | null, w: WindowBounds) => JSON.stringify([key, w.startUs.toString(), w.endUs.toString()]);
const late = (pairs: { key: string | null; window: WindowBounds }[]) =>
  new Set(pairs.map((p) => id(p.key, p.window))).size;

/** The stream and the correction of one pipeline, by the rules of the pure core. */
export class Reference {
  private readonly results = new Map<string, State>();
  private pending: (LatePair & { window: WindowBounds; seq: number })[] = [];
  private readonly lateWindows = new Map<string, LateWindow & { key: string | null; window: WindowBounds }>();
  private readonly accepted: Row[] = [];
  private watermarkUs: bigint | null = null;
  private maxEventUs: bigint | null = null;
  /** Batch ids count from 0, as Spark's do. */
  private batchId = -1;

  constructor(private readonly pipeline: PipelineConfig) {}

  private windowsOf(us: bigint): WindowBounds[] {
    return kindOf(this.pipeline.window).windowsOf(us, this.pipeline.window);
  }

  /** One micro-batch of rows in arrival order (DESIGN §3–6). */
  batch(rows: Row[]): Progress {
    const batchId = ++this.batchId;
    const watermark = this.watermarkUs; // from earlier batches only
    const ok = rows.filter((r) => r.value !== null);
    const onTime: { key: string | null; window: WindowBounds; value: string }[] = [];
    const dropped: { key: string | null; window: WindowBounds; row: Row }[] = [];
    for (const row of ok) {
      this.accepted.push(row);
      for (const window of this.windowsOf(row.us)) {
        if (isLate(window.endUs, watermark)) dropped.push({ key: row.key, window, row });
        else onTime.push({ key: row.key, window, value: row.value! });
      }
      if (this.maxEventUs === null || row.us > this.maxEventUs) this.maxEventUs = row.us;
    }
    for (const { key, window, row } of dropped) {
      this.pending.push({
        id: row.id,
        seq: row.seq,
        key,
        window,
        start: formatInstant(window.startUs),
        end: formatInstant(window.endUs),
        batchId,
      });
      const lw = this.lateWindows.get(id(key, window));
      if (lw) Object.assign(lw, { droppedRows: lw.droppedRows + 1, lastBatchId: batchId });
      else
        this.lateWindows.set(id(key, window), {
          key,
          window,
          start: formatInstant(window.startUs),
          end: formatInstant(window.endUs),
          droppedRows: 1,
          firstBatchId: batchId,
          lastBatchId: batchId,
        });
    }
    for (const { key, window, value } of onTime) {
      const state = this.results.get(id(key, window));
      if (state) state.values.push(value);
      else
        this.results.set(id(key, window), {
          key,
          window,
          values: [value],
          final: false,
          corrected: false,
          revision: 1,
        });
    }
    const next = advanceWatermark(watermark, this.maxEventUs, this.pipeline.watermark.delay);
    let finalized = 0;
    for (const state of this.results.values()) {
      if (!state.final && isLate(state.window.endUs, next)) ((state.final = true), finalized++);
    }
    this.watermarkUs = next;
    return {
      batchId,
      numInputRows: ok.length,
      numQuarantinedRows: rows.length - ok.length,
      watermark: watermark === null ? null : formatInstant(watermark),
      nextWatermark: next === null ? null : formatInstant(next),
      numRowsDroppedByWatermark: dropped.length,
      numLateWindows: late(dropped),
      numRowsUpdated: late(onTime),
      numRowsFinalized: finalized,
      numRowsTotal: [...this.results.values()].filter((s) => !s.final).length,
    };
  }

  /** A correction run with the stream caught up (DESIGN §9–10): every window awaiting correction, recomputed from every accepted row. */
  correct(): Correction {
    if (this.watermarkUs === null) return { windowsExamined: 0, windowsChanged: 0, eventsRecovered: 0, changes: [] };
    const changes: Correction["changes"] = [];
    for (const [wid, lw] of this.lateWindows) {
      const values = this.accepted
        .filter((r) => r.key === lw.key && r.us >= lw.window.startUs && r.us < lw.window.endUs)
        .map((r) => r.value!);
      const state = this.results.get(wid);
      const pairs = this.pending.filter((p) => id(p.key, p.window) === wid).sort((a, b) => a.seq - b.seq);
      changes.push({
        groupKey: lw.key,
        windowStart: lw.start,
        windowEnd: lw.end,
        before: state ? aggregate(state.values) : null,
        after: aggregate(values),
        revision: state ? state.revision + 1 : 1,
        lateEventCount: pairs.length,
        lateEventIds: pairs.map((p) => p.id),
      });
      this.results.set(wid, {
        key: lw.key,
        window: lw.window,
        values,
        final: true,
        corrected: true,
        revision: state ? state.revision + 1 : 1,
      });
    }
    const examined = this.lateWindows.size;
    this.lateWindows.clear();
    this.pending = [];
    changes.sort((a, b) => (keyIn(a.groupKey) + a.windowStart).localeCompare(keyIn(b.groupKey) + b.windowStart));
    return {
      windowsExamined: examined,
      windowsChanged: changes.length,
      eventsRecovered: changes.reduce((n, c) => n + c.lateEventCount, 0),
      changes,
    };
  }

  windows(): WindowResult[] {
    return sortWindows(
      [...this.results.values()].map((s) => ({
        key: s.key,
        start: formatInstant(s.window.startUs),
        end: formatInstant(s.window.endUs),
        ...aggregate(s.values),
        status: s.corrected ? "corrected" : s.final ? "final" : "open",
        revision: s.revision,
      })),
    );
  }

  latePairs(): LatePair[] {
    return sortLatePairs(this.pending.map(({ id, key, start, end, batchId }) => ({ id, key, start, end, batchId })));
  }

  awaitingCorrection(): LateWindow[] {
    return sortWindows(
      [...this.lateWindows.values()].map(({ key, start, end, droppedRows, firstBatchId, lastBatchId }) => ({
        key,
        start,
        end,
        droppedRows,
        firstBatchId,
        lastBatchId,
      })),
    );
  }
}

/** Rows of one scenario in arrival order (event ids `e1`, `e2`, …). */
export function rowsOf(
  events: { k: string | null; t: string; v: string | null }[],
  firstSeq: number,
  idOf: (n: number) => string,
): Row[] {
  return events.map((e, i) => ({ id: idOf(firstSeq + i), seq: firstSeq + i, key: e.k, us: isoToUs(e.t), value: e.v }));
}

const byInstant = (a: string, b: string) => (a === b ? 0 : isoToUs(a) < isoToUs(b) ? -1 : 1);
/** One order for both sides: key (null first), start, end. */
export function sortWindows<T extends { key: string | null; start: string; end: string }>(rows: T[]): T[] {
  return rows.sort(
    (a, b) =>
      (a.key === b.key ? 0 : a.key === null ? -1 : b.key === null ? 1 : a.key < b.key ? -1 : 1) ||
      byInstant(a.start, b.start) ||
      byInstant(a.end, b.end),
  );
}
export function sortLatePairs(rows: LatePair[]): LatePair[] {
  return sortWindows(rows).sort((a, b) => Number(a.id.slice(1)) - Number(b.id.slice(1)) || 0);
}
