/**
 * What the core reads of a pipeline's settings, and the specs derived from them: the `window`
 * block and the `watermark` block as the pipelines file parses them (src/config/pipelineSchema.ts; a
 * `PipelineConfig` is one of these shapes), turned into the core's window spec
 * (src/core/windows.ts), window shape, session gap and watermark settings (src/core/watermark.ts).
 * Pure: no config schema, no database, so the query modules (src/db/sql) take these too.
 */
import type { CalendarWindowSpec, WindowShape, WindowSpec } from "./windows.js";
import { DEFAULT_INPUT, type WatermarkSettings } from "./watermark.js";

/**
 * A pipeline's parsed `window` block: fixed-length (sizes, slide and start offset in ms;
 * tumbling has no slide), calendar (`calendar` as `CalendarWindowSpec` holds it), or session
 * (`gap` in ms). README "Windows"; docs/DESIGN.md "Calendar windows", "Session windows".
 */
export type PipelineWindow =
  | { type: "tumbling"; size: number; offset: number }
  | { type: "sliding"; size: number; slide: number; offset: number }
  | { type: "tumbling" | "sliding"; calendar: CalendarWindowSpec["calendar"] }
  | { type: "session"; gap: number };

/**
 * A pipeline's parsed `watermark` block: the default delay (ms), the choice among inputs (unset:
 * min), the idle timeout (ms) and the inputs with a delay of their own (docs/DESIGN.md "Several inputs").
 */
export interface PipelineWatermark {
  delay: number;
  policy?: "min" | "max" | undefined;
  idleTimeout?: number | undefined;
  inputs?: Record<string, { delay?: number | undefined }> | undefined;
}

/** What the window derivations read of a pipeline: its name (for messages) and its `window` block. */
export interface WindowedPipeline {
  name: string;
  window: PipelineWindow;
}

/**
 * The window spec of a pipeline (src/core/windows.ts): fixed lengths in ms (tumbling: slide = size), or the calendar shape.
 * @throws Error for a session window, which has no window spec (its windows depend on the other events: `sessionGapOf`)
 */
export function windowSpecOf(p: WindowedPipeline): WindowSpec {
  const w = p.window;
  if (w.type === "session") throw new Error(`pipeline ${p.name} has session windows, which have no fixed window spec`);
  if ("calendar" in w) return { calendar: w.calendar };
  return { sizeMs: w.size, slideMs: w.type === "sliding" ? w.slide : w.size, offsetMs: w.offset };
}

/** The window shape of a pipeline for admission's range check (`windowOutsideRange`): its window spec, or its session gap. */
export function windowShapeOf(p: WindowedPipeline): WindowShape {
  return p.window.type === "session" ? { sessionGapMs: p.window.gap } : windowSpecOf(p);
}

/** The session gap of a pipeline with session windows, ms; undefined for any other window. */
export function sessionGapOf(p: { window: PipelineWindow }): number | undefined {
  return p.window.type === "session" ? p.window.gap : undefined;
}

/**
 * Whether a pipeline's micro-batches put their on-time pairs into the pairs table aggregated, one row per (key,
 * window), when their MERGE is not guarded (src/stream/runBatch.ts): not for session windows (they stage their
 * events themselves) nor where a lateness histogram is kept (it counts each pair). Only such a batch may take its
 * input from its span's summary (src/stream/batchInput.ts).
 */
export function aggregatesOnTime(p: { window: PipelineWindow; lateness: { histogram: boolean } }): boolean {
  return p.window.type !== "session" && !p.lateness.histogram;
}

/** The watermark settings of a pipeline (src/core/watermark.ts): the default delay, per input delays, policy (min unless set), idle timeout. */
export function watermarkSettingsOf(p: { watermark: PipelineWatermark }): WatermarkSettings {
  const w = p.watermark;
  const delays = new Map<string, number>();
  for (const [input, s] of Object.entries(w.inputs ?? {})) if (s.delay !== undefined) delays.set(input, s.delay);
  return {
    delayMs: w.delay,
    policy: w.policy ?? "min",
    ...(w.idleTimeout === undefined ? {} : { idleTimeoutMs: w.idleTimeout }),
    delays,
  };
}

/** The inputs a source may name for `p` (HTTP `?input=`, `ingest --input`): the default input and those in `watermark.inputs`. */
export function declaredInputs(p: { watermark: PipelineWatermark }): string[] {
  return [DEFAULT_INPUT, ...Object.keys(p.watermark.inputs ?? {})];
}
