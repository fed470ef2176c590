/**
 * Watermark and late rule, as Spark Structured Streaming defines them
 * (DESIGN §3–4). Instants are epoch microseconds (`bigint`), as stored.
 *
 * - The watermark used while processing batch N is
 *   `max(previous watermark, max accepted event time of batches < N − delay)`.
 *   It never moves backwards and is `null` (undefined) until a batch moved it.
 * - Spark's late rule: an (event, window) pair is dropped iff
 *   `window end <= watermark`. Decided per window, never per event.
 */
import { clampInstant } from "./instants.js";

/**
 * Watermark after a batch, in epoch µs (or `null` while still undefined).
 * @param previousUs watermark before the batch, epoch µs, or null
 * @param maxEventUs max accepted event time seen so far (this batch included), epoch µs, or null
 * @param delayMs watermark delay, whole ms (>= 0), applied in µs
 * @returns the watermark, never before 0001-01-01T00:00:00Z (`MIN_INSTANT_US`): a delay longer than the events'
 *   distance from year 1 gives that instant, which drops nothing more (every window ends after it), and
 *   PostgreSQL cannot read year 0000
 */
export function advanceWatermark(previousUs: bigint | null, maxEventUs: bigint | null, delayMs: number): bigint | null {
  if (maxEventUs === null) return previousUs;
  const candidate = clampInstant(maxEventUs - BigInt(delayMs) * 1000n);
  return previousUs === null || candidate > previousUs ? candidate : previousUs;
}

/** Spark's late rule: `windowEndUs <= watermarkUs` (epoch µs). Nothing is late while the watermark is undefined. */
export function isLate(windowEndUs: bigint, watermarkUs: bigint | null): boolean {
  return watermarkUs !== null && windowEndUs <= watermarkUs;
}

/** How the pipeline's watermark is chosen from its inputs' (Spark's `spark.sql.streaming.multipleWatermarkPolicy`). */
type WatermarkPolicy = "min" | "max";

/** The input of rows landed without one (a pipeline with one input has only this). */
export const DEFAULT_INPUT = "default";

/** One input's event-time state after a batch. Instants are epoch µs; null while undefined. */
export interface InputState {
  input: string;
  /** Max accepted event time of the input's rows read so far. */
  maxEventUs: bigint | null;
  /** `max(previous, maxEventUs − the input's delay)`; never moves backwards. */
  watermarkUs: bigint | null;
  /** Max ingestion time of the input's accepted rows read so far: when it last sent. */
  lastIngestionUs: bigint | null;
}

/** What one batch read from one input: its accepted rows' max event time and max ingestion time, epoch µs. */
export interface InputBatch {
  input: string;
  maxEventUs: bigint | null;
  maxIngestionUs: bigint | null;
}

/** The watermark settings of a pipeline: delays in whole ms. */
export interface WatermarkSettings {
  /** The delay of the default input and of every input without its own. */
  delayMs: number;
  policy: WatermarkPolicy;
  /** Inputs silent this long (ingestion time) leave the policy's choice; undefined = never. */
  idleTimeoutMs?: number;
  /** Per input delays. */
  delays: ReadonlyMap<string, number>;
}

/** The result of `advanceInputs`. */
export interface InputsAdvance {
  inputs: InputState[];
  /** The pipeline watermark after the batch (epoch µs) or null while undefined. */
  watermarkUs: bigint | null;
  /** The ingestion-time clock idleness is measured on: max ingestion time of all accepted rows read so far. */
  clockUs: bigint | null;
  /** Inputs left out of the policy's choice because they were idle. */
  idle: string[];
}

/**
 * Idleness (Flink's, which Spark lacks): an input is idle after a batch when
 * `clock − lastIngestion >= idleTimeout`, the clock being the max ingestion
 * time of every accepted row read so far (all inputs). Measured in ingestion
 * time, not the wall clock, so a replay decides exactly as the live run did.
 * An input whose last ingestion time is unknown (state kept from before inputs
 * were tracked) is never idle.
 */
function isIdle(state: InputState, clockUs: bigint | null, idleTimeoutMs: number | undefined): boolean {
  if (idleTimeoutMs === undefined || clockUs === null || state.lastIngestionUs === null) return false;
  return clockUs - state.lastIngestionUs >= BigInt(idleTimeoutMs) * 1000n;
}

/**
 * Advances every input's watermark on one batch and chooses the pipeline's
 * (DESIGN §3 per input, docs/DESIGN.md "Several inputs"):
 *
 * - input watermark = `max(previous, max accepted event time so far − its delay)`;
 * - the candidate is the min (Spark's default policy) or max of the watermarks
 *   of the inputs that have one and are not idle; an input joins once it has
 *   sent an accepted row (as in Spark, an input without data has no watermark);
 * - the pipeline watermark = `max(previous pipeline watermark, candidate)`: it
 *   never moves backwards, even when an input comes back from idleness behind it.
 *
 * With one input this is exactly `advanceWatermark`.
 * @param previous the inputs' states before the batch
 * @param previousUs the pipeline watermark before the batch, epoch µs, or null
 * @param batch what the batch read, per input that sent accepted rows
 */
export function advanceInputs(
  previous: readonly InputState[],
  previousUs: bigint | null,
  batch: readonly InputBatch[],
  settings: WatermarkSettings,
): InputsAdvance {
  const byInput = new Map(previous.map((s) => [s.input, { ...s }]));
  for (const b of batch) {
    const s = byInput.get(b.input) ?? { input: b.input, maxEventUs: null, watermarkUs: null, lastIngestionUs: null };
    s.maxEventUs = maxOf(s.maxEventUs, b.maxEventUs);
    s.lastIngestionUs = maxOf(s.lastIngestionUs, b.maxIngestionUs);
    byInput.set(b.input, s);
  }
  const inputs = [...byInput.values()].sort((a, b) => (a.input < b.input ? -1 : a.input > b.input ? 1 : 0));
  let clockUs: bigint | null = null;
  for (const s of inputs) {
    s.watermarkUs = advanceWatermark(s.watermarkUs, s.maxEventUs, settings.delays.get(s.input) ?? settings.delayMs);
    clockUs = maxOf(clockUs, s.lastIngestionUs);
  }
  const idle: string[] = [];
  let candidate: bigint | null = null;
  for (const s of inputs) {
    if (s.watermarkUs === null) continue;
    if (isIdle(s, clockUs, settings.idleTimeoutMs)) {
      idle.push(s.input);
      continue;
    }
    if (candidate === null || (settings.policy === "min" ? s.watermarkUs < candidate : s.watermarkUs > candidate))
      candidate = s.watermarkUs;
  }
  const watermarkUs = candidate === null || (previousUs !== null && previousUs >= candidate) ? previousUs : candidate;
  return { inputs, watermarkUs, clockUs, idle };
}

function maxOf(a: bigint | null, b: bigint | null): bigint | null {
  return a === null ? b : b === null || a >= b ? a : b;
}
