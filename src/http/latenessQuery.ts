/**
 * The questions a lateness report answers, read the same way from the command
 * line (`straggler lateness`) and from a query string
 * (`GET /pipelines/{pipeline}/lateness`), and the report's shape (zod, for the
 * OpenAPI document and its tests). One grammar, one set of messages:
 * instants as the other routes read them, delays as durations
 * (config/duration.ts), the target as a share (config/share.ts).
 */
import { z } from "zod";
import { readDuration } from "../config/duration.js";
import { readShare } from "../config/share.js";
import { instant, isoInstant } from "./schemas.js";
import { DEFAULT_TARGET_DROP_SHARE, type LatenessOptions } from "../observe/lateness.js";

/** Most candidate delays a caller may add (each one is a pass of the stream's rules over the rows). */
const MAX_ASKED_DELAYS = 20;

const delayList = z
  .union([z.string(), z.array(z.string())], {
    error: 'expected a duration like "2 hours" (repeat delay, or separate delays with commas)',
  })
  .transform((v, ctx) => {
    const texts = (Array.isArray(v) ? v : [v]).flatMap((t) => t.split(","));
    if (texts.length > MAX_ASKED_DELAYS) {
      ctx.addIssue({ code: "custom", message: `expected at most ${MAX_ASKED_DELAYS} delays, got ${texts.length}` });
      return z.NEVER;
    }
    const ms: number[] = [];
    for (const t of texts) {
      const read = readDuration(t);
      if (!read.ok) {
        ctx.addIssue({ code: "custom", message: read.message });
        return z.NEVER;
      }
      ms.push(read.ms);
    }
    return ms;
  })
  .meta({
    description:
      'further candidate delays, durations as in the pipelines file ("90 minutes"); repeat the parameter or separate with commas',
    example: "90 minutes,3 hours",
  });

const targetDrop = z
  .string()
  .transform((v, ctx) => {
    const read = readShare(v, "drop share");
    if (!read.ok) {
      ctx.addIssue({ code: "custom", message: read.message });
      return z.NEVER;
    }
    return read.share;
  })
  .meta({
    description: "the drop share the recommendation may reach: a percentage (0.1%) or a share (0.001); default 0.1%",
    example: "0.1%",
  });

/**
 * The lateness query: `from`/`to` (ISO 8601 instants, either or both; event time in `[from, to)`),
 * `targetDrop` (a share), `delay` (durations), `byKey` (`true`/`false`). Parses to `LatenessOptions`.
 */
export const latenessQuery = z
  .strictObject({
    from: instant.optional(),
    to: instant.optional(),
    targetDrop: targetDrop.optional(),
    delay: delayList.optional(),
    byKey: z
      .enum(["true", "false"], { error: "expected true or false" })
      .transform((v) => v === "true")
      .optional(),
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, {
    message: "expected from < to",
    path: ["to"],
    when: (c) => c.issues.length === 0,
  });

/** A parsed lateness query as the options of `latenessReport`. */
export function latenessOptionsOf(q: z.infer<typeof latenessQuery>): LatenessOptions {
  return {
    range: { from: q.from ?? null, to: q.to ?? null },
    targetDropShare: q.targetDrop ?? DEFAULT_TARGET_DROP_SHARE,
    ...(q.delay ? { delaysMs: q.delay } : {}),
    ...(q.byKey ? { byKey: true } : {}),
  };
}

const msOrNull = z.number().nullable();
const distributionShape = {
  count: z.number(),
  minMs: msOrNull,
  p50Ms: msOrNull,
  p90Ms: msOrNull,
  p99Ms: msOrNull,
  p999Ms: msOrNull,
  maxMs: msOrNull,
};
const whatIfShape = {
  delayMs: z.number().meta({ description: "the delay, whole ms" }),
  droppedPairs: z
    .number()
    .meta({ description: "(event, window) pairs the late rule would have dropped: numRowsDroppedByWatermark summed" }),
  droppedWindows: z.number().meta({ description: "distinct (group key, window) with a dropped pair" }),
  eventsAffected: z.number(),
  dropShare: z.number().meta({ description: "eventsAffected / counted events (0-1)" }),
  timeToFinal: z.object({ windows: z.number(), medianMs: msOrNull, p99Ms: msOrNull }).nullable().meta({
    description:
      "how long after its end a window became final, ms of arrival time; null when read from the histogram (source histogram)",
  }),
  openWindows: z.object({ max: z.number(), mean: z.number() }).nullable().meta({
    description:
      "open (group key, window) results after each batch: the state held; from the histogram, the recorded ones at the configured delay and null at others",
  }),
};

/** `GET /pipelines/{pipeline}/lateness` and `straggler lateness --json`: the `LatenessAdvice` of src/observe/latenessAdvice.ts. */
export const latenessResponse = z.object({
  pipeline: z.string(),
  source: z.enum(["histogram", "replay"]).meta({
    description:
      "histogram: read from the distribution the stream keeps; replay: every accepted row replayed (a range, byKey, session windows, amended events, or a history older than the histogram)",
  }),
  range: z.object({ from: isoInstant.nullable(), to: isoInstant.nullable() }),
  configuredDelayMs: z.number(),
  distribution: z
    .object({
      ...distributionShape,
      histogram: z
        .array(z.object({ fromMs: msOrNull, toMs: msOrNull, count: z.number() }))
        .meta({ description: "rows with lateness in [fromMs, toMs); null: unbounded" }),
    })
    .meta({
      description:
        "lateness (ingestion time - event time) of the accepted rows, ms; percentiles nearest rank; null without rows",
    }),
  byKey: z
    .array(z.object({ groupKey: z.string().nullable(), ...distributionShape }))
    .optional()
    .meta({ description: "with byKey=true: the distribution per group key, most rows first" }),
  whatIf: z.object({
    batches: z.number(),
    rows: z.number(),
    recordedDroppedPairs: z
      .number()
      .meta({ description: "the numRowsDroppedByWatermark the real run recorded, summed" }),
    delays: z.array(
      z.object({
        labels: z
          .array(z.string())
          .meta({ description: "why it is a candidate: p50, p90, p99, p99.9, max, configured, asked" }),
        ...whatIfShape,
      }),
    ),
  }),
  recommendation: z
    .object({ targetDropShare: z.number(), ...whatIfShape })
    .meta({ description: "the smallest delay whose drop share is at or under the target" }),
});
