/**
 * Lateness and the delay advisor (issue 14, item 1), for `straggler lateness`
 * and `GET /pipelines/{pipeline}/lateness`:
 *
 *   read the lateness distribution (SQL) → pick candidate delays (its
 *   percentiles, the configured delay, any asked) → replay the stream's rules
 *   for every candidate over the recorded arrival order and batch boundaries
 *   (one pass over bronze in `seq` order, keyset pages) → recommend the
 *   smallest delay whose drop share is at or under the target (a second pass
 *   only when it is no candidate already).
 *
 * Everything is read in one REPEATABLE READ snapshot, so the rows, the
 * batches and the distribution agree with each other.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { sessionGapOf, windowSpecOf } from "../core/pipelineSpec.js";
import { DelayNeeds, DelaySimulation, windowEnds, type WhatIfResult, type WhatIfRow } from "../core/lateness.js";
import type { WindowSpec } from "../core/windows.js";
import { isoToUs } from "../core/instants.js";
import { withTransaction, type Pool, type Queryable } from "../db/pool.js";
import { readRecordedBatches, type RecordedBatch } from "../db/sql/observe/latenessBatches.js";
import {
  readLatenessFigures,
  readLatenessFiguresByKey,
  readLatenessHistogram,
  type EventTimeRange,
  type LatenessFigures,
} from "../db/sql/observe/latenessDistribution.js";
import { readLatenessRows } from "../db/sql/observe/latenessRows.js";

/** Histogram edges, ms of lateness: below 0, then [0, 1 s), [1 s, 10 s), … [30 days, ∞). */
export const HISTOGRAM_EDGES_MS = [
  0, 1_000, 10_000, 60_000, 600_000, 3_600_000, 21_600_000, 86_400_000, 604_800_000, 2_592_000_000,
];

/** Default drop-share target of the recommendation: 0.1 % of the events. */
export const DEFAULT_TARGET_DROP_SHARE = 0.001;

export interface LatenessOptions {
  /** Event-time range `[from, to)` (ISO 8601); the watermark still moves with every row. */
  range?: EventTimeRange;
  /** Further candidate delays, whole ms >= 0. */
  delaysMs?: number[];
  /** Drop share (0–1) the recommendation may reach; default 0.001. */
  targetDropShare?: number;
  /** Add the distribution per group key. */
  byKey?: boolean;
  /** Rows per keyset page (default 10,000). */
  pageSize?: number;
  /** `latenessAdvice` only: replay every row even when the histogram answers (`straggler lateness --exact`). */
  exact?: boolean;
}

/** Lateness (ingestion time − event time) in ms, µs kept as fractions; null without rows. */
interface LatenessDistribution {
  count: number;
  minMs: number | null;
  p50Ms: number | null;
  p90Ms: number | null;
  p99Ms: number | null;
  p999Ms: number | null;
  maxMs: number | null;
}

/** One candidate delay: why it is a candidate (`p50`, `configured`, `asked`, …) and what it would have done. */
export interface DelayOutcome extends WhatIfResult {
  labels: string[];
}

export interface LatenessReport {
  pipeline: string;
  /** `replay`: every accepted row replayed (this module); `histogram`: read from the kept histogram (./latenessAdvice.ts). */
  source: "replay";
  range: EventTimeRange;
  configuredDelayMs: number;
  distribution: LatenessDistribution & { histogram: { fromMs: number | null; toMs: number | null; count: number }[] };
  byKey?: (LatenessDistribution & { groupKey: string | null })[];
  /** The replay: recorded batches, accepted rows read, and the dropped pairs the real run recorded. */
  whatIf: { batches: number; rows: number; recordedDroppedPairs: number; delays: DelayOutcome[] };
  /** The smallest delay (whole ms) whose drop share is at or under the target, with what it would have done. */
  recommendation: { targetDropShare: number } & WhatIfResult;
}

type RangeUs = { fromUs: bigint | null; toUs: bigint | null };
const ms = (us: bigint | null) => (us === null ? null : Number(us) / 1000);
/** The smallest whole-ms delay that is at least `us` (0 for negative lateness). */
const delayAtLeast = (us: bigint | null) => (us === null || us <= 0n ? 0 : Number((us + 999n) / 1000n));
const distribution = (f: LatenessFigures): LatenessDistribution => ({
  count: f.count,
  minMs: ms(f.minUs),
  p50Ms: ms(f.p50Us),
  p90Ms: ms(f.p90Us),
  p99Ms: ms(f.p99Us),
  p999Ms: ms(f.p999Us),
  maxMs: ms(f.maxUs),
});

/**
 * The windows the what-if replays: the pipeline's own, or for session windows each event's own
 * window [t, t + gap) (Spark's late rule for sessions; the stream's further drops, of on-time
 * events that touch a final session, are not simulated). `spec` gives a window's start from its end.
 */
function whatIfShape(pipeline: PipelineConfig): { spec: WindowSpec; ends: (eventUs: bigint) => bigint[] } {
  const gapMs = sessionGapOf(pipeline);
  if (gapMs !== undefined) {
    const gap = BigInt(gapMs) * 1000n;
    return { spec: { sizeMs: gapMs, slideMs: gapMs, offsetMs: 0 }, ends: (eventUs) => [eventUs + gap] };
  }
  const spec = windowSpecOf(pipeline);
  return { spec, ends: (eventUs) => windowEnds(eventUs, spec) };
}

/** Feeds every accepted row of the recorded batches to `sinks`, batch by batch, page by page. */
async function replayRows(
  client: Queryable,
  pipeline: string,
  ends: (eventUs: bigint) => bigint[],
  batches: RecordedBatch[],
  { fromUs, toUs }: RangeUs,
  sinks: { row(r: WhatIfRow): void; endBatch(): void }[],
  pageSize: number,
): Promise<number> {
  if (batches.length === 0) return 0;
  const lastSeq = batches.at(-1)!.lastSeq;
  let b = 0,
    afterSeq = batches[0]!.afterSeq,
    rows = 0;
  for (;;) {
    const page = await readLatenessRows(client, pipeline, afterSeq, lastSeq, pageSize);
    for (const r of page) {
      for (; r.seq > batches[b]!.lastSeq; b++) for (const s of sinks) s.endBatch();
      const counted = (fromUs === null || r.eventUs >= fromUs) && (toUs === null || r.eventUs < toUs);
      const row: WhatIfRow = {
        eventUs: r.eventUs,
        ingestionUs: r.ingestionUs,
        groupKey: r.groupKey,
        windowEndsUs: ends(r.eventUs),
        counted,
      };
      for (const s of sinks) s.row(row);
    }
    rows += page.length;
    if (page.length < pageSize) break;
    afterSeq = page.at(-1)!.seq;
  }
  for (; b < batches.length; b++) for (const s of sinks) s.endBatch();
  return rows;
}

/**
 * The candidate delays (ascending) with their labels: the distribution's percentiles and max, the
 * configured delay, the asked ones; equal delays are one row, a label given twice for it once.
 */
export function candidateDelays(
  figures: LatenessFigures,
  configuredMs: number,
  askedMs: number[] = [],
): Map<number, string[]> {
  const labelled: [string, number][] = [
    ["p50", delayAtLeast(figures.p50Us)],
    ["p90", delayAtLeast(figures.p90Us)],
    ["p99", delayAtLeast(figures.p99Us)],
    ["p99.9", delayAtLeast(figures.p999Us)],
    ["max", delayAtLeast(figures.maxUs)],
    ["configured", configuredMs],
    ...askedMs.map((d): [string, number] => ["asked", d]),
  ];
  const labels = new Map<number, string[]>();
  for (const [label, d] of labelled)
    if (!labels.get(d)?.includes(label)) labels.set(d, [...(labels.get(d) ?? []), label]);
  return new Map([...labels].sort(([a], [b]) => a - b));
}

/** The report's distribution from exact figures and row counts per bucket of `HISTOGRAM_EDGES_MS` (`width_bucket` numbering). */
export function distributionOf(figures: LatenessFigures, counts: Map<number, number>): LatenessReport["distribution"] {
  const histogram = [null, ...HISTOGRAM_EDGES_MS].map((fromMs, i) => ({
    fromMs,
    toMs: HISTOGRAM_EDGES_MS[i] ?? null,
    count: counts.get(i) ?? 0,
  }));
  return { ...distribution(figures), histogram };
}

/**
 * Refuses what no report answers.
 * @throws RangeError for a negative or fractional delay, or a target outside [0, 1]
 */
export function checkLatenessOptions(options: LatenessOptions): number {
  const target = options.targetDropShare ?? DEFAULT_TARGET_DROP_SHARE;
  if (!(target >= 0 && target <= 1)) throw new RangeError(`target drop share must be between 0 and 1, got ${target}`);
  for (const d of options.delaysMs ?? [])
    if (!Number.isSafeInteger(d) || d < 0) throw new RangeError(`a delay must be a whole number of ms >= 0, got ${d}`);
  return target;
}

/**
 * The lateness report of `pipeline` (see the module comment).
 * @throws RangeError for a negative or fractional delay, or a target outside [0, 1]; database errors
 */
export async function latenessReport(
  pool: Pool,
  pipeline: PipelineConfig,
  options: LatenessOptions = {},
): Promise<LatenessReport> {
  const range = options.range ?? { from: null, to: null };
  const target = checkLatenessOptions(options);
  const { spec, ends } = whatIfShape(pipeline);
  const pageSize = options.pageSize ?? 10_000;
  const rangeUs: RangeUs = {
    fromUs: range.from === null ? null : isoToUs(range.from),
    toUs: range.to === null ? null : isoToUs(range.to),
  };
  return withTransaction(
    pool,
    async (client) => {
      const figures = await readLatenessFigures(client, pipeline.name, range);
      const edgesUs = HISTOGRAM_EDGES_MS.map((e) => BigInt(e) * 1000n);
      const counts = new Map(
        (await readLatenessHistogram(client, pipeline.name, range, edgesUs)).map((h) => [h.bucket, h.count]),
      );
      const byKey = options.byKey
        ? (await readLatenessFiguresByKey(client, pipeline.name, range)).map((k) => ({
            groupKey: k.groupKey,
            ...distribution(k),
          }))
        : undefined;

      const labels = candidateDelays(figures, pipeline.watermark.delay, options.delaysMs);
      const delays = [...labels.keys()];

      const batches = await readRecordedBatches(client, pipeline.name);
      const sims = delays.map((d) => new DelaySimulation(d, spec, rangeUs));
      const needs = new DelayNeeds();
      const rows = await replayRows(client, pipeline.name, ends, batches, rangeUs, [...sims, needs], pageSize);
      const outcomes = sims.map((s) => ({ labels: labels.get(s.delayMs)!, ...s.result() }));

      const recommendedMs = needs.smallestDelay(target);
      let recommended = outcomes.find((o) => o.delayMs === recommendedMs);
      if (!recommended) {
        const sim = new DelaySimulation(recommendedMs, spec, rangeUs);
        await replayRows(client, pipeline.name, ends, batches, rangeUs, [sim], pageSize);
        recommended = { labels: [], ...sim.result() };
      }
      const { labels: _labels, ...recommendation } = recommended;
      return {
        pipeline: pipeline.name,
        source: "replay",
        range,
        configuredDelayMs: pipeline.watermark.delay,
        distribution: distributionOf(figures, counts),
        ...(byKey ? { byKey } : {}),
        whatIf: {
          batches: batches.length,
          rows,
          recordedDroppedPairs: batches.reduce((n, b) => n + b.numRowsDroppedByWatermark, 0),
          delays: outcomes,
        },
        recommendation: { targetDropShare: target, ...recommendation },
      };
    },
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
  );
}
