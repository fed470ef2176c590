/**
 * Request schemas of the REST API (zod), and the response bodies the API
 * builds itself (the rows of views are in `responses.ts`). The OpenAPI
 * document is generated from them (`openapi.ts`), so the two cannot drift apart.
 */
import { z } from "zod";
import { formatInstant } from "../core/instants.js";
import { parseInstant } from "../core/timestamps.js";
import { parseWindowCursor } from "./windowCursor.js";

/** An instant the API answers: ISO 8601 in UTC (RFC 3339 `date-time`), microseconds kept. */
export const isoInstant = z.string().meta({
  format: "date-time",
  description: "ISO 8601 UTC instant, microseconds kept",
  example: "2026-10-01T12:00:00.000Z",
});

/** An ISO 8601 instant with a zone, normalised to UTC. */
export const instant = z
  .string()
  .refine((s) => parseInstant(s, "iso8601", undefined).ok, {
    message: "expected an ISO 8601 instant with a zone, e.g. 2026-10-01T12:00:00Z",
  })
  .transform((s) => formatInstant((parseInstant(s, "iso8601", undefined) as { us: bigint }).us))
  .meta({ format: "date-time", description: "ISO 8601 instant with a zone", example: "2026-10-01T12:00:00Z" });

/** Free text compared in SQL (a key, a reason): PostgreSQL text cannot hold NUL, so one is a 400, not a database error. */
const sqlText = z.string().refine((s) => !s.includes("\u0000"), { message: "expected text without NUL characters" });

/** A group key as a client names it: U+FFFF is the stored text of the null group, which clients name null (or nullKey=true). */
export const keyText = sqlText.refine((s) => !s.includes("\uFFFF"), {
  message: "expected a key without U+FFFF (the null group is named null, or nullKey=true)",
});

const limit = z.coerce.number({ error: "expected an integer from 1 to 10000" }).int().min(1).max(10_000).default(100);

export const rangeQuery = z
  .strictObject({ from: instant.optional(), to: instant.optional() })
  .refine((q) => (q.from === undefined) === (q.to === undefined), {
    message: "give both from and to, or neither",
    path: ["to"],
    when: (c) => c.issues.length === 0,
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, {
    message: "expected from < to",
    path: ["to"],
    when: (c) => c.issues.length === 0,
  });

/** `GET /pipelines/{pipeline}/retractions`: the ones after `after` (the last id a consumer has read; 0 from the first). */
export const retractionsQuery = z.strictObject({
  after: z.coerce
    .number({ error: "expected an integer >= 0 (the last retraction id read)" })
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .default(0),
  limit,
});

export const windowsQuery = z
  .strictObject({
    from: instant.optional(),
    to: instant.optional(),
    key: keyText.optional(),
    /** `true`: only the null group (a key field null or absent); a query string cannot carry a null `key`. */
    nullKey: z
      .enum(["true", "false"], { error: "expected true or false" })
      .transform((v) => v === "true")
      .optional(),
    status: z.enum(["open", "final", "corrected"], { error: "expected open, final or corrected" }).optional(),
    /** The cursor of the next page: the `Straggler-Next` header of the page before (src/db/sql/readmodel/readWindowResults.ts `windowCursor`). */
    after: z
      .string()
      .max(2000)
      .transform((v, ctx) => {
        const c = parseWindowCursor(v);
        if (c === undefined) {
          ctx.addIssue({ code: "custom", message: "expected the Straggler-Next header of an earlier page" });
          return z.NEVER;
        }
        return c;
      })
      .optional(),
    limit,
  })
  .refine((q) => !(q.nullKey && q.key !== undefined), {
    message: "give key or nullKey=true, not both",
    path: ["nullKey"],
    when: (c) => c.issues.length === 0,
  });

export const runIdParam = z.coerce.number({ error: "expected a run id (integer)" }).int().positive();

export const limitQuery = z.strictObject({ limit });
export const quarantineQuery = z.strictObject({ reason: sqlText.optional(), limit });

/** States of a source (view `straggler.sources`). */
const SOURCE_STATES = ["landed", "refused", "changed_after_landing", "waiting_to_settle"] as const;

export const sourcesQuery = z.strictObject({
  state: z
    .enum(SOURCE_STATES, { error: "expected landed, refused, changed_after_landing or waiting_to_settle" })
    .optional(),
  kind: z
    .enum(["file", "http", "stdin", "replay", "nats"], { error: "expected file, http, stdin, replay or nats" })
    .optional(),
  limit,
});

export const recomputeBody = z
  .strictObject({
    from: instant.optional(),
    to: instant.optional(),
    /** Group keys; `null` names the null group. */
    keys: z
      .array(keyText.nullable())
      .min(1, { message: "expected at least one key; leave keys out for every key" })
      .max(10_000)
      .optional(),
  })
  .refine((q) => (q.from === undefined) === (q.to === undefined), {
    message: "give both from and to, or neither",
    path: ["to"],
    when: (c) => c.issues.length === 0,
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, {
    message: "expected from < to",
    path: ["to"],
    when: (c) => c.issues.length === 0,
  });

export const aggregate = z
  .object({ count: z.number(), sum: z.string().nullable(), min: z.string().nullable(), max: z.string().nullable() })
  .meta({
    id: "Aggregate",
    description: "A window's aggregate: count, and sum, min and max of the value as decimal text (null without values)",
  });

export const landResponse = z.object({
  pipeline: z.string(),
  /** `http:<Idempotency-Key>`, or `http:<uuid>` made up for a request without a key. */
  source: z.string(),
  /** True when this answers a retry: the same key and body landed before, and nothing was written now. */
  alreadyLanded: z.boolean(),
  landed: z.number(),
  accepted: z.number(),
  quarantined: z.number(),
  byReason: z.record(z.string(), z.number()),
  /** Bronze sequence numbers of the landed rows: the stream has applied them once `checkpoint.lastOffset >= lastSeq`. */
  firstSeq: z.number().nullable(),
  lastSeq: z.number().nullable(),
});

export const correctionSummary = z.object({
  runId: z.number().nullable(),
  pipeline: z.string(),
  trigger: z.enum(["cron", "api", "cli"]),
  status: z.enum(["succeeded", "failed", "skipped"]),
  range: z.object({ from: isoInstant, to: isoInstant }).nullable(),
  keys: z.array(z.string().nullable()).nullable(),
  bronzeSnapshot: z.number().nullable(),
  windowsExamined: z.number(),
  windowsChanged: z.number(),
  windowsFailed: z.number(),
  windowsPastHorizon: z
    .number()
    .optional()
    .describe(
      "windows awaiting correction that archived rows could be in: not recomputed, left awaiting correction (present only when some were)",
    ),
  eventsRecovered: z.number(),
  durationMs: z.number(),
  error: z.string().nullable(),
  changes: z.array(
    z.object({
      groupKey: z.string().nullable(),
      windowStart: isoInstant,
      windowEnd: isoInstant,
      before: aggregate.nullable(),
      after: aggregate,
      revision: z.number(),
      lateEventCount: z.number(),
      lateEventIds: z.array(z.string()),
    }),
  ),
});

export const errorResponse = z
  .object({
    error: z.string().meta({ description: "a stable code, e.g. invalid_request, not_found, unauthorized, busy" }),
    message: z.string().meta({ description: "for people: what was wrong and how to put it right" }),
  })
  .meta({ id: "Error", description: "Every 4xx and 5xx answer (src/http/errors.ts)" });

/** The alert webhook's body (src/observe/webhook.ts `AlertChange`): an alert's new state. */
export const alertChange = z
  .object({
    pipeline: z.string(),
    alert: z.enum(["drop_share", "quarantine_share", "watermark_stalled", "backlog", "correction_failed"]),
    state: z.enum(["ok", "firing"]),
    since: isoInstant.meta({ description: "when the state changed, ISO 8601 UTC" }),
    value: z
      .number()
      .nullable()
      .meta({ description: "what it was judged on: a share (0-1), seconds, rows, or a correction run id" }),
    threshold: z
      .number()
      .nullable()
      .meta({ description: "the configured threshold in the same unit; null for correction_failed" }),
    message: z.string().meta({ description: "a line for people" }),
  })
  .meta({ id: "AlertChange" });

/** A route without query parameters: one given is a 400, never silently ignored. */
export const noQuery = z.strictObject({});

/** The path parameters of a pipeline's routes. */
export const pipelineParams = z.object({
  pipeline: z.string().meta({ description: "a pipeline's name (pipelines.yaml)" }),
});
