/**
 * Window kinds for the property test. A kind is one generator (the `window`
 * block of a pipeline config, as a user writes it) and one reference function
 * (the windows an event belongs to, from the pure core). A new kind (session,
 * calendar) plugs in by adding an entry to `WINDOW_KINDS`: event times near
 * its window edges are derived from its reference function, not written per kind.
 */
import fc from "fast-check";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { formatDuration } from "../../src/config/duration.js";
import { assignWindows, type WindowBounds } from "../../src/core/windows.js";

/** The `window` block of a pipeline config, YAML-shaped (durations as text). */
export type WindowBlock = Record<string, unknown> & { type: string };

export interface WindowKind {
  type: string;
  /** Window blocks of this kind, shrinking toward small, simple shapes. */
  block: fc.Arbitrary<WindowBlock>;
  /**
   * Reference: the windows containing the instant `eventUs` (epoch µs), oldest
   * first, under the validated block (durations in ms).
   */
  windowsOf(eventUs: bigint, window: PipelineConfig["window"]): WindowBounds[];
}

/** A length in ms as the config writes it (`"2 minutes"`, `"1 second 500 milliseconds"`). */
const text = (ms: number) => formatDuration(ms);

/** Lengths are a whole number of units of 1 ms, 1 s or 1 min: shrinks to 1 ms. */
const unitMs = fc.constantFrom(1, 1_000, 60_000);

/** tumbling and sliding: Spark's window(), `assignWindows` in src/core/windows.ts. */
function sparkWindows(window: PipelineConfig["window"], eventUs: bigint): WindowBounds[] {
  if ("calendar" in window || window.type === "session")
    throw new Error(`a ${window.type === "session" ? "session" : "calendar"} window is not a fixed-length kind`);
  return assignWindows(eventUs, {
    sizeMs: window.size,
    slideMs: window.type === "sliding" ? window.slide : window.size,
    offsetMs: window.offset,
  });
}

const tumbling: WindowKind = {
  type: "tumbling",
  block: fc
    .record({ unit: unitMs, size: fc.integer({ min: 1, max: 6 }), offset: fc.nat({ max: 5 }) })
    .map(({ unit, size, offset }) => ({
      type: "tumbling",
      size: text(size * unit),
      offset: text((offset % size) * unit),
    })),
  windowsOf: (eventUs, window) => sparkWindows(window, eventUs),
};

const sliding: WindowKind = {
  type: "sliding",
  block: fc
    .record({
      unit: unitMs,
      size: fc.integer({ min: 1, max: 6 }),
      slide: fc.integer({ min: 1, max: 6 }),
      offset: fc.nat({ max: 5 }),
    })
    .map(({ unit, size, slide, offset }) => {
      const s = Math.min(slide, size); // Spark refuses a slide longer than the window
      return { type: "sliding", size: text(size * unit), slide: text(s * unit), offset: text((offset % s) * unit) };
    }),
  windowsOf: (eventUs, window) => sparkWindows(window, eventUs),
};

/** Zones with DST changes of 1 h (New York, London), 30 min (Lord Howe), at midnight (Sao Paulo, until 2019), and none (Kolkata). */
const ZONES = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Sao_Paulo", "Asia/Kolkata"];

/** Every calendar shape docs/DESIGN.md allows, simplest first. */
const CALENDAR_SHAPES: WindowBlock[] = [
  { type: "tumbling", size: "1 day" },
  { type: "tumbling", size: "1 week" },
  { type: "tumbling", size: "1 week", weekStart: "sunday" },
  { type: "tumbling", size: "1 month" },
  { type: "sliding", size: "3 days", slide: "1 day" },
  { type: "sliding", size: "1 week", slide: "1 day" },
  { type: "sliding", size: "2 weeks", slide: "1 week", weekStart: "wednesday" },
  { type: "sliding", size: "2 months", slide: "1 month" },
];

/** tumbling and sliding with a timeZone: local days, weeks and months (`assignWindows` with a calendar spec). */
const calendar: WindowKind = {
  type: "calendar",
  block: fc
    .record({ shape: fc.constantFrom(...CALENDAR_SHAPES), timeZone: fc.constantFrom(...ZONES) })
    .map(({ shape, timeZone }) => ({ ...shape, timeZone })),
  windowsOf: (eventUs, window) => {
    if (!("calendar" in window)) throw new Error("not a calendar window");
    return assignWindows(eventUs, { calendar: window.calendar });
  },
};

export const WINDOW_KINDS: readonly WindowKind[] = [tumbling, sliding, calendar];

/** The kind of a validated window block: `calendar` when it has a time zone, else its type. */
export function kindOf(window: PipelineConfig["window"]): WindowKind {
  const type = "calendar" in window ? "calendar" : window.type;
  const kind = WINDOW_KINDS.find((k) => k.type === type);
  if (kind === undefined) throw new Error(`no window kind "${type}" in the property test`);
  return kind;
}
