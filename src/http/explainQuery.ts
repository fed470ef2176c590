/**
 * `GET /pipelines/{pipeline}/windows/history`: its query (`start`, `key` or `nullKey=true`) and
 * its answer's shape (zod, for the OpenAPI document and its tests), the shape of
 * `WindowExplanation` (src/observe/explain.ts; `straggler explain --json` prints the same).
 */
import { z } from "zod";
import { aggregate, instant, isoInstant, keyText } from "./schemas.js";

/** The query: the window's start (an ISO 8601 instant with a zone; for sessions an instant inside the session) and the key. */
export const explainQuery = z
  .strictObject({
    start: instant.meta({
      description: "the window's start, ISO 8601 with a zone (session windows: an instant inside the session)",
      example: "2026-10-01T12:00:00Z",
    }),
    key: keyText.optional().meta({
      description:
        "the group key (a composite key as its JSON array text); leave it out for a pipeline without group key fields",
    }),
    nullKey: z
      .enum(["true", "false"], { error: "expected true or false" })
      .transform((v) => v === "true")
      .optional()
      .meta({ description: "true: the null group (a key field null or absent)" }),
  })
  .refine((q) => !(q.nullKey && q.key !== undefined), {
    message: "give key or nullKey=true, not both",
    path: ["nullKey"],
    when: (c) => c.issues.length === 0,
  });

const status = z.enum(["open", "final", "corrected"]);
const nullableAggregate = aggregate.nullable();
const bounds = { start: isoInstant, end: isoInstant };
const session = z.object({
  ...bounds,
  count: z.number(),
  sum: z.string().nullable(),
  min: z.string().nullable(),
  max: z.string().nullable(),
});

const cause = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("micro-batch"),
    batchId: z.number().int(),
    watermark: isoInstant
      .nullable()
      .meta({ description: "the watermark of earlier batches, which the late rule used (null: none yet)" }),
    watermarkAfter: isoInstant
      .nullable()
      .meta({ description: "the watermark after the batch: windows ending at or before it became final" }),
    eventsAdded: z.number().int(),
    amended: z
      .array(z.string())
      .meta({ description: "event ids of the window whose later version (admission.dedupe: latest) this batch read" }),
  }),
  z.object({
    kind: z.literal("correction"),
    runId: z.number().int(),
    trigger: z.string().meta({ description: "cron, api or cli" }),
    cronSlot: isoInstant.nullable(),
    reconcileRunId: z.number().int().nullable().meta({
      description: "the reconcile run that found the window differing from bronze, when that caused the change",
    }),
    lateEvents: z.array(z.string()).meta({ description: "event ids of the late events the run recovered" }),
    amended: z.array(z.string()),
  }),
  z.object({ kind: z.literal("cutover"), version: z.number().int(), previousVersion: z.number().int() }),
  z.object({ kind: z.literal("hold"), holdId: z.number().int(), reason: z.string(), rule: z.string().nullable() }),
  z.object({ kind: z.literal("release"), holdId: z.number().int() }),
]);

const revision = z.object({
  n: z.number().int().meta({ description: "1 for the oldest" }),
  at: isoInstant,
  cause,
  before: nullableAggregate.meta({ description: "null: no window before" }),
  after: nullableAggregate.meta({ description: "null: no window after (a cutover to a version without it)" }),
  status,
  revision: z.number().int(),
  published: z.boolean().meta({ description: "false while a hold kept the published value; the release publishes it" }),
  window: z.object(bounds).optional().meta({ description: "sessions: the session's bounds after the revision" }),
  replaced: z
    .array(session)
    .optional()
    .meta({ description: "sessions: the sessions it replaced (merged, or the one it was split from)" }),
});

const lateEvent = z.object({
  seq: z.number().int(),
  eventId: z.string(),
  eventTime: isoInstant,
  ingestionTime: isoInstant,
  landedAt: isoInstant,
  value: z.string().nullable(),
  latenessMs: z
    .number()
    .int()
    .meta({ description: "ingestion time − event time, ms (as the lateness report measures it)" }),
  droppedInBatch: z.number().int().nullable(),
  droppedAtWatermark: isoInstant.nullable(),
  recoveredByRun: z.number().int().nullable().meta({ description: "null: awaiting correction" }),
});

const quarantinedRow = z.object({
  seq: z.number().int(),
  eventId: z.string(),
  eventTime: isoInstant,
  ingestionTime: isoInstant,
  landedAt: isoInstant,
  value: z.string().nullable(),
  reason: z.string().nullable(),
  detail: z.string().nullable(),
});

export const explainResponse = z
  .object({
    pipeline: z.string(),
    key: z
      .string()
      .nullable()
      .meta({ description: 'null: the null group; "" for a pipeline without group key fields' }),
    windowType: z.enum(["tumbling", "sliding", "calendar", "session"]),
    window: z.object(bounds),
    now: z
      .object({
        count: z.number(),
        sum: z.string().nullable(),
        min: z.string().nullable(),
        max: z.string().nullable(),
        status,
        revision: z.number().int(),
        held: z.boolean(),
      })
      .nullable(),
    revisions: z.array(revision),
    lateEvents: z.array(lateEvent),
    sessionsMerged: z.array(session),
    quarantined: z.object({
      total: z.number().int(),
      rows: z.array(quarantinedRow).meta({ description: "the first 1000 by seq" }),
    }),
  })
  .meta({ description: "a window's history (straggler explain --json prints the same)" });
