/**
 * Random scenarios for the property test: a window (any kind of
 * `windowKinds.ts`), a watermark delay, a micro-batch row limit, and the
 * events in arrival order, cut into landings; after some landings a
 * correction runs. Everything is written as a user would (ISO instants with
 * µs, decimal texts, duration texts), so a shrunk counterexample reads as a
 * pipeline config and its input.
 */
import fc from "fast-check";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { formatDuration } from "../../src/config/duration.js";
import { formatInstant, isoToUs } from "../../src/core/instants.js";
import { pipeline as pipelineOf } from "../helpers/fixtures.js";
import { WINDOW_KINDS, kindOf, type WindowBlock } from "./windowKinds.js";

/** One input record: group key (null = the null group), event time (ISO, µs), value (decimal text; null is quarantined). */
export interface Ev {
  k: string | null;
  t: string;
  v: string | null;
}

/** Events landed as one source; the stream then runs until caught up, and a correction after it when `correctAfter`. */
export interface Landing {
  events: Ev[];
  correctAfter: boolean;
}

export interface Scenario {
  window: WindowBlock;
  delay: string;
  maxRowsPerBatch: number;
  landings: Landing[];
}

/** The validated pipeline config of a scenario (JSONL: `id`, `t`, `k`, `v`). */
export function pipelineFor(name: string, s: Scenario): PipelineConfig {
  return pipelineOf({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
    window: s.window,
    watermark: { delay: s.delay },
    trigger: { maxRowsPerBatch: s.maxRowsPerBatch },
    admission: { maxFutureSkew: null },
  });
}

/** Event ids in arrival order over all landings: `e1`, `e2`, … */
export const eventId = (n: number) => `e${n + 1}`;

/** A decimal as PostgreSQL prints it, without trailing fractional zeros: one text per value (so min/max ties are one text). */
function decimalText(units: number, scale: number): string {
  const digits = String(Math.abs(units)).padStart(scale + 1, "0");
  const whole = digits.slice(0, digits.length - scale),
    frac = digits.slice(digits.length - scale).replace(/0+$/, "");
  return `${units < 0 ? "-" : ""}${whole}${frac === "" ? "" : "." + frac}`;
}

const value: fc.Arbitrary<string | null> = fc.oneof(
  {
    weight: 15,
    arbitrary: fc
      .record({ units: fc.integer({ min: -999, max: 999 }), scale: fc.integer({ min: 0, max: 2 }) })
      .map(({ units, scale }) => decimalText(units, scale)),
  },
  { weight: 1, arbitrary: fc.constant(null) },
);

const key = fc.constantFrom<string | null>("a", null, "b", "");

/**
 * Where the events cluster: 1970 (readable µs), a 2026 afternoon (days before
 * Lord Howe's DST change), 1969 (negative epoch µs), and the day before New
 * York's 2026 spring change (calendar windows across DST).
 */
const base = fc.constantFrom(
  0n,
  isoToUs("2026-10-01T12:00:00Z"),
  isoToUs("1969-12-31T00:00:00Z"),
  isoToUs("2026-03-07T12:00:00Z"),
);

/**
 * An event time before it meets its window: `pos` sixths of a window's width
 * from the base, plus `jitter` thousandths of a sixth; on an `edge`, moved to
 * the start or end (`pick`) of a window containing that point, exact or 1 µs
 * either side. Mostly edges: a watermark then often falls exactly on a window
 * end, where the late rule's `<=` decides. Independent of the window, so that
 * shrinking the window keeps the events (a chained generator would draw new ones).
 */
const instant = fc.record({
  pos: fc.integer({ min: -6, max: 36 }),
  jitter: fc.integer({ min: 0, max: 999 }),
  edge: fc.oneof(
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 4, arbitrary: fc.record({ pick: fc.nat({ max: 7 }), nudge: fc.constantFrom(0n, 0n, -1n, 1n) }) },
  ),
});
type Instant = typeof instant extends fc.Arbitrary<infer T> ? T : never;

function instantText(at: Instant, window: PipelineConfig["window"], baseUs: bigint, widthUs: bigint): string {
  const us = baseUs + (BigInt(at.pos) * widthUs) / 6n + (BigInt(at.jitter) * widthUs) / 6000n;
  if (at.edge === null) return formatInstant(us);
  const edges = kindOf(window)
    .windowsOf(us, window)
    .flatMap((w) => [w.startUs, w.endUs]);
  return formatInstant(edges[at.edge.pick % edges.length]! + at.edge.nudge);
}

const event = fc.record({ k: key, at: instant, v: value });

/** Scenarios over every window kind. */
export const scenarios: fc.Arbitrary<Scenario> = fc
  .record({
    window: fc.oneof(...WINDOW_KINDS.map((k) => k.block)),
    baseUs: base,
    /** Watermark delay in quarters of a window's width. */
    delay: fc.oneof(fc.constantFrom(0, 4), fc.nat({ max: 8 })),
    maxRowsPerBatch: fc.oneof(fc.constant(100_000), fc.integer({ min: 1, max: 4 })),
    landings: fc.array(
      fc.record({ events: fc.array(event, { minLength: 1, maxLength: 8 }), correctAfter: fc.boolean() }),
      { minLength: 1, maxLength: 6 },
    ),
  })
  .map(({ window, baseUs, delay, maxRowsPerBatch, landings }) => {
    const parsed = pipelineFor("shape", { window, delay: "0 seconds", maxRowsPerBatch: 1, landings: [] }).window;
    const widthUs = kindOf(parsed)
      .windowsOf(baseUs, parsed)
      .reduce((w, b) => (b.endUs - b.startUs > w ? b.endUs - b.startUs : w), 1n);
    return {
      window,
      delay: formatDuration(Math.floor((delay * Number(widthUs / 1000n)) / 4)),
      maxRowsPerBatch,
      landings: landings.map((l) => ({
        events: l.events.map((e) => ({ k: e.k, t: instantText(e.at, parsed, baseUs, widthUs), v: e.v })),
        correctAfter: l.correctAfter,
      })),
    };
  });
