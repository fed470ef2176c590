/**
 * Lateness and the delay advisor's what-if (issue 14): replays the stream's
 * watermark and late rule (DESIGN §3–4, `./watermark.ts`) over the accepted
 * rows in the arrival order and batch boundaries a real run recorded, for any
 * watermark delay, without touching the database.
 *
 * Feed rows in bronze `seq` order, batch by batch: `row()` for every accepted
 * row of the batch, then `endBatch()`. Nothing but per-window state is held,
 * so a ledger of any size streams through.
 *
 * Instants are epoch microseconds (`bigint`), delays whole milliseconds (as
 * configured), reported durations milliseconds (`number`, whole ms, floored).
 */
import { advanceWatermark, isLate } from "./watermark.js";
import { assignWindows, windowStartOf, type WindowSpec } from "./windows.js";
import { floorDiv } from "./instants.js";

/**
 * One accepted bronze row. `windowEndsUs`: the ends of its windows (`windowEnds`), computed once
 * for every delay. `counted`: inside the asked event-time range (all rows move the watermark).
 */
export interface WhatIfRow {
  eventUs: bigint;
  ingestionUs: bigint;
  groupKey: string;
  windowEndsUs: bigint[];
  counted: boolean;
}

/** The ends (epoch µs) of the windows holding `eventUs` (`assignWindows`); a window's size is constant in its units, so an end names a window. */
export function windowEnds(eventUs: bigint, spec: WindowSpec): bigint[] {
  return assignWindows(eventUs, spec).map((w) => w.endUs);
}

/** Nearest-rank percentiles (PostgreSQL's `percentile_disc`) over a value → count map; null when empty. */
export function weightedPercentile(counts: Map<number, number>, q: number): number | null {
  let total = 0;
  for (const n of counts.values()) total += n;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const v of [...counts.keys()].sort((a, b) => a - b)) {
    seen += counts.get(v)!;
    if (seen >= rank) return v;
  }
  return null;
}

const bump = (m: Map<number, number>, k: number, by = 1) => m.set(k, (m.get(k) ?? 0) + by);
const toMs = (us: bigint) => Number(floorDiv(us, 1000n));

/** What one delay would have done. Counts are over counted rows; `openWindows` over the whole run. */
export interface WhatIfResult {
  delayMs: number;
  /** (event, window) pairs the late rule would have dropped (`numRowsDroppedByWatermark` summed). */
  droppedPairs: number;
  /** Distinct (group key, window) with at least one dropped pair (rows of `late_windows`). */
  droppedWindows: number;
  /** Events with at least one dropped pair, and their share of the counted events (0–1). */
  eventsAffected: number;
  dropShare: number;
  /**
   * Time to final, ms of arrival time: the latest ingestion time seen when the batch
   * that finalized a (group key, window) committed, minus the window's end. Over
   * finalized windows overlapping the range; median and p99 nearest-rank.
   */
  timeToFinal: { windows: number; medianMs: number | null; p99Ms: number | null };
  /** Open (group key, window) results after each batch (Spark's state rows, `numRowsTotal`): max and mean over batches. */
  openWindows: { max: number; mean: number };
}

/**
 * The stream's rules for one delay: the watermark comes from earlier batches
 * only, an (event, window) pair is late iff `window end <= watermark`, a
 * window is final once `end <= watermark` after a batch.
 */
export class DelaySimulation {
  private watermarkUs: bigint | null = null;
  private maxEventUs: bigint | null = null;
  private clockUs: bigint | null = null;
  /** Open windows: end (epoch µs; the end names the window) → group keys. */
  private readonly open = new Map<bigint, Set<string>>();
  private openCount = 0;
  private readonly droppedKeys = new Set<string>();
  private droppedPairs = 0;
  private eventsAffected = 0;
  private events = 0;
  private readonly finalMs = new Map<number, number>();
  private batches = 0;
  private openMax = 0;
  private openSum = 0;

  /**
   * @param delayMs watermark delay, whole ms >= 0
   * @param spec the pipeline's window shape (`windowSpecOf`): a window's start from its end
   * @param range event-time range `[fromUs, toUs)` the counts cover (null ends: unbounded)
   */
  constructor(
    readonly delayMs: number,
    private readonly spec: WindowSpec,
    private readonly range: { fromUs: bigint | null; toUs: bigint | null } = { fromUs: null, toUs: null },
  ) {}

  /** One accepted row of the current batch, in `seq` order. */
  row(r: WhatIfRow): void {
    let late = false;
    for (const endUs of r.windowEndsUs) {
      if (isLate(endUs, this.watermarkUs)) {
        late = true;
        if (!r.counted) continue;
        this.droppedPairs++;
        this.droppedKeys.add(`${endUs}|${r.groupKey}`);
        continue;
      }
      let keys = this.open.get(endUs);
      if (!keys) this.open.set(endUs, (keys = new Set()));
      if (!keys.has(r.groupKey)) {
        keys.add(r.groupKey);
        this.openCount++;
      }
    }
    if (this.maxEventUs === null || r.eventUs > this.maxEventUs) this.maxEventUs = r.eventUs;
    if (this.clockUs === null || r.ingestionUs > this.clockUs) this.clockUs = r.ingestionUs;
    if (r.counted) {
      this.events++;
      if (late) this.eventsAffected++;
    }
  }

  /** Ends the current batch: the watermark advances, windows with `end <= watermark` become final. */
  endBatch(): void {
    this.watermarkUs = advanceWatermark(this.watermarkUs, this.maxEventUs, this.delayMs);
    for (const [endUs, keys] of this.open) {
      if (!isLate(endUs, this.watermarkUs)) continue;
      this.open.delete(endUs);
      this.openCount -= keys.size;
      if (this.overlapsRange(windowStartOf(endUs, this.spec), endUs))
        bump(this.finalMs, toMs(this.clockUs! - endUs), keys.size);
    }
    this.batches++;
    this.openMax = Math.max(this.openMax, this.openCount);
    this.openSum += this.openCount;
  }

  private overlapsRange(startUs: bigint, endUs: bigint): boolean {
    const { fromUs, toUs } = this.range;
    return (fromUs === null || endUs > fromUs) && (toUs === null || startUs < toUs);
  }

  /** The counts so far (call after the last `endBatch()`). */
  result(): WhatIfResult {
    let windows = 0;
    for (const n of this.finalMs.values()) windows += n;
    return {
      delayMs: this.delayMs,
      droppedPairs: this.droppedPairs,
      droppedWindows: this.droppedKeys.size,
      eventsAffected: this.eventsAffected,
      dropShare: this.events === 0 ? 0 : this.eventsAffected / this.events,
      timeToFinal: {
        windows,
        medianMs: weightedPercentile(this.finalMs, 0.5),
        p99Ms: weightedPercentile(this.finalMs, 0.99),
      },
      openWindows: { max: this.openMax, mean: this.batches === 0 ? 0 : this.openSum / this.batches },
    };
  }
}

/**
 * The delay each event needs not to be dropped, for every delay at once. With
 * `M` the max accepted event time of earlier batches, a pair is dropped iff
 * `end <= M − delay`, i.e. iff `delayMs <= floor((M − end) / 1 ms)`: the event
 * needs `floor((M − end) / 1 ms) + 1` ms over its windows (0 when none is late
 * at delay 0). Holds one count per distinct need above 0.
 */
export class DelayNeeds {
  private maxEventUs: bigint | null = null;
  private batchMaxUs: bigint | null = null;
  private readonly needs = new Map<number, number>();
  private events = 0;

  /** One accepted row of the current batch; only `counted` rows are tallied. */
  row(r: WhatIfRow): void {
    if (this.batchMaxUs === null || r.eventUs > this.batchMaxUs) this.batchMaxUs = r.eventUs;
    if (!r.counted) return;
    this.events++;
    if (this.maxEventUs === null) return;
    let need = 0;
    for (const endUs of r.windowEndsUs) {
      const slackUs = this.maxEventUs - endUs;
      if (slackUs >= 0n) need = Math.max(need, toMs(slackUs) + 1);
    }
    if (need > 0) bump(this.needs, need);
  }

  endBatch(): void {
    if (this.batchMaxUs !== null && (this.maxEventUs === null || this.batchMaxUs > this.maxEventUs))
      this.maxEventUs = this.batchMaxUs;
    this.batchMaxUs = null;
  }

  /**
   * The smallest delay (whole ms) at which the share of counted events that
   * lose a pair (`eventsAffected / events`, as `WhatIfResult.dropShare`) is at
   * or under `targetShare` (0–1).
   */
  smallestDelay(targetShare: number): number {
    return smallestDelayOf(this.needs, this.events, targetShare);
  }
}

/**
 * The smallest delay (whole ms) at which at most `targetShare` (0–1) of `events` lose a pair, from
 * `needs`: the delay an event needs not to lose one (ms, > 0) → events needing it (`DelayNeeds`).
 */
export function smallestDelayOf(needs: Map<number, number>, events: number, targetShare: number): number {
  let above = 0;
  for (const need of [...needs.keys()].sort((a, b) => b - a)) {
    const n = needs.get(need)!;
    if ((above + n) / events > targetShare) return need;
    above += n;
  }
  return 0;
}
