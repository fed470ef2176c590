/** Hold routes (README "Incidents: hold"): hold a pipeline's published results, release them. Both need the token. */
import express from "express";
import { z } from "zod";
import { HoldStateError, holdPipeline, releasePipeline } from "../lifecycle/hold.js";
import type { RouteContext } from "./context.js";
import { HttpError, parseOr400 } from "./errors.js";
import { errors, json, WRITE_SECURITY } from "./openapi.js";
import { errorResponse, isoInstant, noQuery, pipelineParams } from "./schemas.js";

/** A hold as the API answers it. */
export const holdResponse = z.object({
  holdId: z.number(),
  pipeline: z.string(),
  reason: z.string(),
  rule: z
    .enum(["onFutureTs", "quarantineShare"])
    .nullable()
    .meta({ description: "the pipelines-file rule that held it; null when held by hand" }),
  trippedBy: z.record(z.string(), z.unknown()).nullable().meta({
    description: "the rows that tripped the rule: `rows` (the first 100: seq, eventId, reason, detail) and `rowCount`",
  }),
  batchId: z.number().nullable().meta({ description: "the micro-batch whose rows tripped the rule" }),
  heldAt: isoInstant,
  releasedAt: isoInstant.nullable(),
});

const holdBody = z.strictObject({
  reason: z
    .string()
    .trim()
    .min(1, 'expected a reason, e.g. "future-dated events under investigation"')
    .max(1000, "expected at most 1000 characters"),
});

const conflict = { 409: json("already held (hold), or not held (release)", errorResponse) };

export function addHoldRoutes(ctx: RouteContext): void {
  const { routes, deps, pipelineOf, auth } = ctx;
  const { pool, log } = deps;
  const asConflict = (e: unknown): never => {
    if (e instanceof HoldStateError) throw new HttpError(409, "conflict", e.message);
    throw e;
  };

  routes.add(
    {
      method: "post",
      path: "/pipelines/{pipeline}/hold",
      operationId: "holdPipeline",
      summary:
        "Hold the pipeline's published results: straggler.window_results (and /windows) keep serving what they serve now, every row held, while landing, the stream and corrections go on",
      security: WRITE_SECURITY,
      request: {
        params: pipelineParams,
        query: noQuery,
        body: { required: true, content: { "application/json": { schema: holdBody } } },
      },
      responses: {
        201: json(
          "the hold, and how many windows stay published",
          z.object({ hold: holdResponse, windows: z.number() }),
        ),
        ...conflict,
        ...errors([400, 401, 404, 500, 503]),
      },
    },
    auth,
    express.json({ limit: "16kb" }),
    async (req, res) => {
      const pipeline = pipelineOf(req);
      parseOr400(noQuery, req.query, "query");
      const body = parseOr400(holdBody, req.body ?? {}, "body");
      const held = await holdPipeline(pool, pipeline.name, body.reason).catch(asConflict);
      log.warn(
        { pipeline: pipeline.name, holdId: held.hold.holdId, windows: held.windows },
        `pipeline ${pipeline.name} held over REST: ${held.hold.reason}`,
      );
      res.status(201).json(held);
    },
  );

  routes.add(
    {
      method: "post",
      path: "/pipelines/{pipeline}/release",
      operationId: "releasePipeline",
      summary: "Release the pipeline's hold: straggler.window_results shows the live results, all at once",
      security: WRITE_SECURITY,
      request: { params: pipelineParams, query: noQuery },
      responses: { 200: json("the released hold", holdResponse), ...conflict, ...errors([400, 401, 404, 500, 503]) },
    },
    auth,
    async (req, res) => {
      const pipeline = pipelineOf(req);
      parseOr400(noQuery, req.query, "query");
      const hold = await releasePipeline(pool, pipeline.name).catch(asConflict);
      log.info({ pipeline: pipeline.name, holdId: hold.holdId }, `pipeline ${pipeline.name} released over REST`);
      res.json(hold);
    },
  );
}
