/**
 * Response bodies of the REST API (zod), for the OpenAPI document. Rows of
 * the public views are described from their drizzle declarations
 * (`db/views.ts`, through drizzle-zod), so the document follows the views.
 */
import { lastReconcileSchema, watermarkHolderSchema } from "./extrasSchemas.js";
import { createSelectSchema } from "drizzle-zod";
import { getViewSelectedFields, type View } from "drizzle-orm";
import { z } from "zod";
import {
  correctionAudit,
  correctionHistory,
  failedWindows,
  quarantine,
  retractions,
  sources,
  streamProgress,
  windowResults,
} from "../db/views.js";
import { holdResponse } from "./holdRoutes.js";
import { aggregate, isoInstant } from "./schemas.js";

/** A view's row; its instants (drizzle custom columns) as ISO strings; `omit`: columns a route leaves out. */
function rowOf(view: View, omit: string[] = []) {
  const fields = getViewSelectedFields(view) as Record<string, { dataType?: string }>;
  const instants = Object.entries(fields)
    .filter(([, c]) => c.dataType === "custom")
    .map(([name]) => [name, () => isoInstant]);
  return createSelectSchema(view, Object.fromEntries(instants)).omit(Object.fromEntries(omit.map((k) => [k, true])));
}

export const windowRow = rowOf(windowResults, ["pipeline"]);
/** One input's event-time state (docs/DESIGN.md "Several inputs"). */
const inputState = z.object({
  input: z.string().meta({ description: "the input's name; default for rows whose source named none" }),
  maxEventTime: isoInstant.nullable().meta({ description: "max accepted event time of the input's rows read so far" }),
  watermark: isoInstant
    .nullable()
    .meta({ description: "the input's own watermark: its max event time − its delay, never backwards" }),
  lastIngestionTime: isoInstant.nullable().meta({
    description: "max ingestion time of its accepted rows read so far (when it last sent); null when unknown",
  }),
});

export const progressRow = rowOf(streamProgress).extend({
  inputs: z
    .array(
      inputState.extend({
        idle: z
          .boolean()
          .meta({ description: "left out of the pipeline's watermark: it sent nothing for watermark.idleTimeout" }),
      }),
    )
    .nullable()
    .meta({ description: "each input's state after the batch; null for batches run before inputs were tracked" }),
});
export const failedWindowRow = rowOf(failedWindows);
export const retractionRow = rowOf(retractions, ["pipeline"]);
export const correctionRunRow = rowOf(correctionHistory);

export const quarantineResponse = z.object({
  byReason: z.record(z.string(), z.number()),
  rows: z.array(rowOf(quarantine, ["pipeline"])),
});

export const sourcesResponse = z.object({
  byState: z.object({
    landed: z.number(),
    refused: z.number(),
    changed_after_landing: z.number(),
    waiting_to_settle: z.number(),
  }),
  rows: z.array(rowOf(sources, ["pipeline"])),
});

export const correctionRunResponse = z.object({ run: correctionRunRow, changes: z.array(rowOf(correctionAudit)) });

export const healthResponse = z.object({
  status: z.enum(["ok", "unhealthy"]),
  database: z.enum(["reachable", "unreachable"]),
});

export const pipelineStatusRow = z.object({
  pipeline: z.string(),
  owner: z.string().nullable().meta({
    description:
      "the replica (`straggler serve` process) that owns the pipeline's stream, landing folder and log consumer: its STRAGGLER_REPLICA_ID or host:pid; null when no service runs it",
    example: "node-1:4121",
  }),
  watermark: isoInstant.nullable(),
  maxEventTime: isoInstant.nullable(),
  watermarkLagMs: z
    .number()
    .nullable()
    .meta({ description: "how far the watermark trails the newest event, ms (a decimal when microseconds differ)" }),
  backlogRows: z.number(),
  ledger: z.object({
    landed: z.number(),
    accepted: z.number(),
    quarantined: z.number(),
    quarantinedByReason: z.record(z.string(), z.number()),
  }),
  windows: z.object({ open: z.number(), final: z.number(), corrected: z.number(), awaitingCorrection: z.number() }),
  numRowsDroppedByWatermark: z.number(),
  sources: sourcesResponse.shape.byState,
  failedWindows: z.number(),
  alerts: z
    .array(
      z.object({
        alert: z.enum([
          "drop_share",
          "quarantine_share",
          "watermark_stalled",
          "backlog",
          "correction_failed",
          "reconcile_drift",
        ]),
        state: z.enum(["ok", "firing"]),
        since: isoInstant
          .nullable()
          .meta({ description: "when the state last changed; null until the alert has been judged" }),
        value: z
          .number()
          .nullable()
          .meta({ description: "what it was judged on then: a share (0-1), seconds, rows, or a correction run id" }),
      }),
    )
    .meta({ description: "the configured alerts (README: Metrics and alerts)" }),
  policy: z
    .object({
      state: z.enum(["unrecorded", "live", "refused"]).meta({
        description:
          "refused: the configured policy differs from the live results' policy, and the pipeline is not streamed",
      }),
      policyVersion: z
        .string()
        .meta({ description: "the configured policy's version (hash), as each landing records it" }),
      live: z
        .object({ version: z.number(), policyVersion: z.string() })
        .nullable()
        .meta({ description: "the live results' version and policy version; null before the first batch" }),
      changes: z.array(z.string()).meta({
        description: "each changed setting as `path: live → configured`",
        example: ["admission.maxFutureSkew: null → 1 hour"],
      }),
      message: z.string().nullable().meta({ description: "the refusal, with the ways forward" }),
    })
    .meta({ description: "README: Policy versions" }),
  hold: holdResponse
    .nullable()
    .meta({ description: "the open hold (README: Incidents: hold); null when the pipeline is not held" }),
  inputs: z.array(inputState).meta({
    description:
      "each input's state as of the checkpoint, sorted by name; the pipeline's watermark is their min (or max, watermark.policy), idle inputs left out",
  }),
  watermarkHolder: watermarkHolderSchema,
  lastReconcile: lastReconcileSchema,
});

/** `GET /metrics`: Prometheus text format. */
export const metricsText = z.string();

const windowId = { groupKey: z.string().nullable(), windowStart: isoInstant, windowEnd: isoInstant };

export const reconcileReport = z.object({
  pipeline: z.string(),
  range: z.object({ from: isoInstant, to: isoInstant }).nullable(),
  watermark: isoInstant.nullable(),
  bronzeSnapshot: z.number(),
  windowsChecked: z.number(),
  mismatches: z.array(z.object({ ...windowId, stored: aggregate.nullable(), expected: aggregate.nullable() })),
  failedWindows: z.array(z.object({ ...windowId, sqlstate: z.string(), error: z.string() })),
  ledger: z.object({
    landed: z.number(),
    accepted: z.number(),
    quarantined: z.number(),
    landedBySource: z.number(),
    balanced: z.boolean(),
  }),
  backlogRows: z.number(),
  ok: z.boolean(),
});

/** `GET /openapi.json`: an OpenAPI 3.1 document. */
export const openApiResponse = z
  .object({
    openapi: z.string(),
    info: z.object({ title: z.string(), version: z.string() }),
    paths: z.record(z.string(), z.unknown()),
  })
  .loose();
