/**
 * The delay advisor as people and the page ask it (issue 26 item 2; docs/lateness.md): the
 * lateness report read from the histogram the stream keeps (src/db/sql/lateness/), in one
 * statement over its distinct values, never a replay of bronze. The full replay
 * (`latenessReport`, ./lateness.ts) answers instead when the histogram cannot: an event-time
 * range, the split per group key, session windows, amended events (`admission.dedupe: latest`),
 * a history older than the histogram, or `exact: true` (`straggler lateness --exact`).
 *
 * From the histogram, exact for every whole-ms delay: the distribution, dropped pairs, dropped
 * windows, events affected and their share, the recommendation. Open windows: the recorded ones
 * at the configured delay when the live version ran every recorded batch, else null (after a
 * cutover the batches before it ran another policy's windows), null at other delays; time to
 * final: null (both need the replay).
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { sessionGapOf } from "../core/pipelineSpec.js";
import { smallestDelayOf, type WhatIfResult } from "../core/lateness.js";
import type { Pool } from "../db/pool.js";
import type { LatenessFigures } from "../db/sql/observe/latenessDistribution.js";
import { readLatenessHistogramOf, type LatenessHistogramRead } from "../db/sql/lateness/histogramRead.js";
import {
  candidateDelays,
  checkLatenessOptions,
  distributionOf,
  HISTOGRAM_EDGES_MS,
  latenessReport,
  type DelayOutcome,
  type LatenessOptions,
  type LatenessReport,
} from "./lateness.js";

/** A candidate's outcome as the replay gives it; time to final and open windows null where the histogram keeps none. */
export type AdvisedOutcome = Omit<DelayOutcome, "timeToFinal" | "openWindows"> & {
  timeToFinal: WhatIfResult["timeToFinal"] | null;
  openWindows: WhatIfResult["openWindows"] | null;
};

/** `latenessReport`'s shape, with the source it was read from. */
export type LatenessAdvice = Omit<LatenessReport, "source" | "whatIf" | "recommendation"> & {
  source: "histogram" | "replay";
  whatIf: Omit<LatenessReport["whatIf"], "delays"> & { delays: AdvisedOutcome[] };
  recommendation: { targetDropShare: number } & Omit<AdvisedOutcome, "labels">;
};

type Counts = [bigint, number][];

/** Exact nearest-rank figures (`percentile_disc`) over ascending value → count pairs. */
function figuresOf(values: Counts): LatenessFigures {
  const count = values.reduce((n, [, c]) => n + c, 0);
  const at = (q: number): bigint | null => {
    if (count === 0) return null;
    const rank = Math.max(1, Math.ceil(q * count));
    let seen = 0;
    for (const [v, c] of values) if ((seen += c) >= rank) return v;
    return values.at(-1)![0];
  };
  return {
    count,
    minUs: values[0]?.[0] ?? null,
    p50Us: at(0.5),
    p90Us: at(0.9),
    p99Us: at(0.99),
    p999Us: at(0.999),
    maxUs: values.at(-1)?.[0] ?? null,
  };
}

/** Rows per `width_bucket(value, edges)` bucket of `HISTOGRAM_EDGES_MS` (edges in µs). */
function bucketCounts(values: Counts): Map<number, number> {
  const edges = HISTOGRAM_EDGES_MS.map((e) => BigInt(e) * 1000n);
  const counts = new Map<number, number>();
  for (const [v, c] of values) {
    const bucket = edges.filter((e) => e <= v).length;
    counts.set(bucket, (counts.get(bucket) ?? 0) + c);
  }
  return counts;
}

/** Rows whose value (a slack, whole ms) is at least `delayMs`: late at that delay. */
const lateAt = (values: Counts, delayMs: number) => values.reduce((n, [v, c]) => (v >= BigInt(delayMs) ? n + c : n), 0);

/** Whether the histogram answers: no range nor key split, not sessions, no amended events, every batch counted. */
function histogramAnswers(pipeline: PipelineConfig, options: LatenessOptions, h: LatenessHistogramRead): boolean {
  const ranged = options.range !== undefined && (options.range.from !== null || options.range.to !== null);
  if (options.exact || ranged || options.byKey || sessionGapOf(pipeline) !== undefined) return false;
  if (pipeline.admission.dedupe === "latest") return false;
  return (h.measures.get("batches")?.[0]?.[1] ?? 0) === h.batches;
}

function outcomeAt(
  h: LatenessHistogramRead,
  events: number,
  delayMs: number,
  configuredMs: number,
): Omit<AdvisedOutcome, "labels"> {
  const m = (k: Parameters<typeof h.measures.get>[0]) => h.measures.get(k) ?? [];
  const eventsAffected = lateAt(m("event_slack_ms"), delayMs);
  return {
    delayMs,
    droppedPairs: lateAt(m("pair_slack_ms"), delayMs),
    droppedWindows: lateAt(m("window_slack_ms"), delayMs),
    eventsAffected,
    dropShare: events === 0 ? 0 : eventsAffected / events,
    timeToFinal: null,
    // The recorded open windows are the configured delay's only if the live policy ran every batch (no cutover since).
    openWindows: delayMs === configuredMs && h.liveThroughout ? { max: h.openMax ?? 0, mean: h.openMean ?? 0 } : null,
  };
}

/**
 * The lateness report of `pipeline` from the histogram when it answers, else the replay's (see the module comment).
 * @throws RangeError for a negative or fractional delay, or a target outside [0, 1]; database errors
 */
export async function latenessAdvice(
  pool: Pool,
  pipeline: PipelineConfig,
  options: LatenessOptions = {},
): Promise<LatenessAdvice> {
  const target = checkLatenessOptions(options);
  const h = options.exact ? null : await readLatenessHistogramOf(pool, pipeline.name);
  if (h === null || !histogramAnswers(pipeline, options, h)) return latenessReport(pool, pipeline, options);
  const lateness = h.measures.get("lateness_us") ?? [];
  const figures = figuresOf(lateness);
  const configuredMs = pipeline.watermark.delay;
  const labels = candidateDelays(figures, configuredMs, options.delaysMs);
  const delays = [...labels].map(([d, l]) => ({ labels: l, ...outcomeAt(h, figures.count, d, configuredMs) }));
  const needs = new Map((h.measures.get("event_slack_ms") ?? []).map(([v, c]) => [Number(v) + 1, c]));
  const recommended = outcomeAt(h, figures.count, smallestDelayOf(needs, figures.count, target), configuredMs);
  return {
    pipeline: pipeline.name,
    source: "histogram",
    range: options.range ?? { from: null, to: null },
    configuredDelayMs: configuredMs,
    distribution: distributionOf(figures, bucketCounts(lateness)),
    whatIf: { batches: h.batches, rows: figures.count, recordedDroppedPairs: h.recordedDroppedPairs, delays },
    recommendation: { targetDropShare: target, ...recommended },
  };
}
