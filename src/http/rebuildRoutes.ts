/**
 * Rebuild routes (README "Incidents: hold, rebuild, cut over"): build a
 * candidate version beside the live one and answer its diff. Needs the token.
 */
import express from "express";
import { z } from "zod";
import { cutover, CutoverRefusedError } from "../lifecycle/cutover.js";
import { MAX_RESULTS_VERSION } from "../db/sql/stream/policyVersions.js";
import { rebuild, RebuildRefusedError } from "../lifecycle/rebuild.js";
import { SourceUnreadableError } from "../lifecycle/rebuildClassify.js";
import { TimeZoneRefusedError } from "../guards/index.js";
import type { RouteContext } from "./context.js";
import { HttpError, parseOr400 } from "./errors.js";
import { errors, json, WRITE_SECURITY } from "./openapi.js";
import { aggregate, errorResponse, isoInstant, noQuery, pipelineParams } from "./schemas.js";

const iso = isoInstant;

const windowChange = z.object({
  change: z.enum(["added", "removed", "changed"]),
  groupKey: z.string().nullable(),
  windowStart: iso,
  windowEnd: iso,
  before: aggregate.nullable().meta({ description: "the live version's window; null when added" }),
  after: aggregate.nullable().meta({ description: "the candidate's window; null when removed" }),
});

/** A rebuild's report, as `straggler rebuild --json` prints it. */
export const rebuildResponse = z.object({
  pipeline: z.string(),
  version: z.number().meta({ description: "the candidate version built" }),
  policyVersion: z.string(),
  liveVersion: z.number().nullable(),
  resumed: z.boolean().meta({ description: "true when it continued a rebuild that had been stopped" }),
  rowsClassified: z.number(),
  checkpoint: z.object({
    batchId: z.number(),
    lastSeq: z.number(),
    maxEventTime: iso.nullable(),
    watermark: iso.nullable(),
    inputs: z.array(z.unknown()).nullable().meta({
      description:
        "each input's event-time state; null: the default input alone, with the checkpoint's max event time and watermark",
    }),
  }),
  windows: z.number(),
  reconcile: z.object({
    ok: z.boolean(),
    windowsChecked: z.number(),
    mismatches: z.array(
      z.object({
        groupKey: z.string(),
        windowStart: iso,
        windowEnd: iso,
        stored: z.number().nullable(),
        expected: z.number().nullable(),
      }),
    ),
    ledger: z.object({ landed: z.number(), accepted: z.number(), quarantined: z.number(), balanced: z.boolean() }),
  }),
  diff: z.object({
    windows: z.array(windowChange),
    reclassified: z.array(z.object({ before: z.string(), after: z.string(), rows: z.number() })).meta({
      description:
        "rows whose classification changed, by (before, after) label: accepted, SUPERSEDED or the quarantine reason",
    }),
    rows: z
      .array(z.object({ seq: z.number(), eventId: z.string(), before: z.string(), after: z.string() }))
      .meta({ description: "the first 100 rows whose classification changed, by seq" }),
  }),
});

const rebuildBody = z.strictObject({
  restart: z.boolean().optional().meta({ description: "start over instead of continuing a stopped rebuild" }),
});

/** A cutover's result, as `straggler cutover --json` prints it. */
export const cutoverResponse = z.object({
  pipeline: z.string(),
  version: z.number().meta({ description: "the version now live" }),
  previous: z
    .number()
    .nullable()
    .meta({ description: "the version live before, now retired; null when there was none" }),
  rollback: z.boolean().meta({ description: "true when the version had served before" }),
  caughtUpRows: z
    .number()
    .meta({ description: "rows landed since the version was built, classified under its policy before it went live" }),
  checkpoint: z.object({
    batchId: z.number(),
    lastSeq: z.number(),
    maxEventTime: iso.nullable(),
    watermark: iso.nullable(),
    inputs: z.array(z.unknown()).nullable().meta({
      description:
        "each input's event-time state; null: the default input alone, with the checkpoint's max event time and watermark",
    }),
  }),
  windows: z.number(),
  reclassifiedRows: z.number().meta({ description: "bronze rows whose classification columns changed" }),
});

const cutoverBody = z.strictObject({
  to: z
    .number({ error: `expected a version number (1, 2, … up to ${MAX_RESULTS_VERSION})` })
    .int()
    .positive()
    .max(MAX_RESULTS_VERSION)
    .meta({ description: "the version to serve" }),
});

export function addRebuildRoutes(ctx: RouteContext): void {
  const { routes, deps, pipelineOf, auth } = ctx;
  const { pool, log } = deps;

  routes.add(
    {
      method: "post",
      path: "/pipelines/{pipeline}/rebuild",
      operationId: "rebuildPipeline",
      summary:
        "Build a candidate results version from the whole ledger under the configured policy, beside the live one (which keeps serving); answers its reconcile and its diff against the live version",
      security: WRITE_SECURITY,
      request: {
        params: pipelineParams,
        query: noQuery,
        body: { required: false, content: { "application/json": { schema: rebuildBody } } },
      },
      responses: {
        200: json("the candidate, its checkpoint, reconcile and diff", rebuildResponse),
        409: json(
          "another rebuild of the pipeline is running, the configured fields.eventId differs from the live policy's, or the window's zone is one PostgreSQL does not know: nothing was built",
          errorResponse,
        ),
        422: json("a CSV source's recorded header does not name a column the policy reads", errorResponse),
        ...errors([400, 401, 404, 500, 503]),
      },
    },
    auth,
    express.json({ limit: "16kb" }),
    async (req, res) => {
      const pipeline = pipelineOf(req);
      parseOr400(noQuery, req.query, "query");
      const body = parseOr400(rebuildBody, req.body ?? {}, "body");
      const report = await rebuild(pool, pipeline, { restart: body.restart }).catch((e: unknown) => {
        if (e instanceof RebuildRefusedError || e instanceof TimeZoneRefusedError)
          throw new HttpError(409, "conflict", e.message);
        if (e instanceof SourceUnreadableError) throw new HttpError(422, "source_unreadable", e.message);
        throw e;
      });
      log.info(
        { pipeline: pipeline.name, version: report.version, ok: report.reconcile.ok },
        `pipeline ${pipeline.name} rebuilt over REST as version ${report.version}`,
      );
      res.json(report);
    },
  );

  routes.add(
    {
      method: "post",
      path: "/pipelines/{pipeline}/cutover",
      operationId: "cutoverPipeline",
      summary:
        "Serve another results version in one transaction: a complete candidate (cut over) or a retired version (roll back); it first catches up with the rows landed since it was built",
      security: WRITE_SECURITY,
      request: {
        params: pipelineParams,
        query: noQuery,
        body: { required: true, content: { "application/json": { schema: cutoverBody } } },
      },
      responses: {
        200: json("the version now live", cutoverResponse),
        409: json(
          "the version is live already, its rebuild is not complete, or its reconcile failed: nothing changed",
          errorResponse,
        ),
        ...errors([400, 401, 404, 500, 503], { 404: "no such pipeline, or no such version of it" }),
      },
    },
    auth,
    express.json({ limit: "16kb" }),
    async (req, res) => {
      const pipeline = pipelineOf(req);
      parseOr400(noQuery, req.query, "query");
      const body = parseOr400(cutoverBody, req.body ?? {}, "body");
      const r = await cutover(pool, pipeline, body.to).catch((e: unknown) => {
        if (e instanceof CutoverRefusedError)
          throw new HttpError(e.status, e.status === 404 ? "not_found" : "conflict", e.message);
        throw e;
      });
      log.warn(
        { pipeline: pipeline.name, version: r.version, previous: r.previous },
        `pipeline ${pipeline.name} cut over to version ${r.version} over REST`,
      );
      res.json(r);
    },
  );
}
