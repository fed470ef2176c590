/** Correction routes: run one (`recompute`), read past runs and what they changed, reconcile. */
import express, { type Request } from "express";
import { z } from "zod";
import { runCorrection } from "../correction/correct.js";
import { reconcile } from "../correction/reconcile.js";
import { logCorrection, logPolicyAdopted } from "../correction/schedule.js";
import { HorizonRefusedError, PolicyRefusedError, TimeZoneRefusedError } from "../guards/index.js";
import { readCorrectionAudit } from "../db/sql/correction/readCorrectionAudit.js";
import { readCorrectionHistory, readCorrectionRun } from "../db/sql/correction/readCorrectionHistory.js";
import { addPipelineRead, type RouteContext } from "./context.js";
import { readsOf } from "./readBudget.js";
import { ANSWER_BYTES_DEFAULT, budgetAnswer } from "./answerBudget.js";
import { HttpError, parseOr400 } from "./errors.js";
import { errors, json, WRITE_SECURITY } from "./openapi.js";
import { correctionRunResponse, correctionRunRow, reconcileReport } from "./responses.js";
import {
  correctionSummary,
  errorResponse,
  limitQuery,
  noQuery,
  pipelineParams,
  rangeQuery,
  recomputeBody,
  runIdParam,
} from "./schemas.js";

/** True when the request carries a body (a non-zero Content-Length, or a chunked one). */
function hasBody(req: Request): boolean {
  return (
    req.get("transfer-encoding") !== undefined ||
    (req.get("content-length") !== undefined && req.get("content-length") !== "0")
  );
}

/** A body in another type would be skipped by the JSON parser and the range silently ignored: 415. */
const requireJsonBody: express.RequestHandler = (req, _res, next) => {
  if (hasBody(req) && !req.is("application/json")) {
    const type = req.get("content-type");
    next(
      new HttpError(
        415,
        "unsupported_media_type",
        `Content-Type ${type === undefined ? "missing" : JSON.stringify(type.slice(0, 100))}: a recompute body must be application/json`,
      ),
    );
  } else next();
};

export function addCorrectionRoutes(ctx: RouteContext): void {
  const { routes, deps, pipelineOf, auth } = ctx;
  const { pool, log } = deps;
  const correct =
    deps.correct ??
    ((pipeline, request) =>
      runCorrection(pool, pipeline, request, { onPolicyAdopted: (a) => logPolicyAdopted(log, a) }));

  routes.add(
    {
      method: "post",
      path: "/pipelines/{pipeline}/recompute",
      operationId: "recompute",
      summary: "Run a correction: windows awaiting correction, plus every final window in [from, to) when given",
      security: WRITE_SECURITY,
      request: {
        params: pipelineParams,
        query: noQuery,
        body: { required: false, content: { "application/json": { schema: recomputeBody } } },
      },
      responses: {
        200: json("the run summary", correctionSummary),
        ...errors([400, 401, 404, 415, 503], { 415: "a body that is not application/json" }),
        409: json(
          "the pipeline is refused (its configured policy differs from its live results' policy, or its calendar window's zone is one PostgreSQL does not know): `policy_refused` with the refusal message; or the range reaches windows whose rows are archived past the correction horizon: `horizon_refused`; no run is recorded",
          errorResponse,
        ),
        500: json(
          "the run failed (its summary, status `failed`, with the error), or an internal error",
          z.union([correctionSummary, errorResponse]),
        ),
      },
    },
    auth,
    requireJsonBody,
    express.json({ limit: "64kb" }),
    async (req, res) => {
      const pipeline = pipelineOf(req);
      parseOr400(noQuery, req.query, "query");
      const body = parseOr400(recomputeBody, req.body ?? {}, "body");
      const summary = await correct(pipeline, {
        trigger: "api",
        range: body.from && body.to ? { from: body.from, to: body.to } : undefined,
        keys: body.keys,
      }).catch((e: unknown) => {
        // A refused pipeline (changed policy, or a calendar zone PostgreSQL does not know) is a known state: no run is recorded.
        if (e instanceof PolicyRefusedError || e instanceof TimeZoneRefusedError)
          throw new HttpError(409, "policy_refused", e.message);
        // A range reaching windows whose rows are archived (src/guards/horizon.ts): nothing recomputed, no run recorded.
        if (e instanceof HorizonRefusedError) throw new HttpError(409, "horizon_refused", e.message);
        throw e;
      });
      logCorrection(log, summary);
      res.status(summary.status === "failed" ? 500 : 200).json(summary);
    },
  );

  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/corrections",
      operationId: "listCorrectionRuns",
      summary: "Correction runs",
      query: limitQuery,
      response: z.array(correctionRunRow),
      description: "runs, latest first",
    },
    (pipeline, q, pool) => readCorrectionHistory(pool, pipeline.name, q.limit),
  );

  routes.add(
    {
      method: "get",
      path: "/pipelines/{pipeline}/corrections/{runId}",
      operationId: "getCorrectionRun",
      summary: "One correction run and the windows it changed (before/after)",
      request: { params: pipelineParams.extend({ runId: runIdParam }), query: noQuery },
      responses: {
        200: json("the run and its changes", correctionRunResponse),
        ...errors([400, 404, 500, 503], { 404: "no such pipeline, or no such run of it" }),
      },
    },
    async (req, res) => {
      const pipeline = pipelineOf(req);
      const runId = parseOr400(runIdParam, req.params.runId, "path.runId");
      parseOr400(noQuery, req.query, "query");
      const reads = readsOf(req, pool);
      const run = await readCorrectionRun(reads, pipeline.name, runId);
      if (run === undefined)
        throw new HttpError(404, "not_found", `no correction run ${runId} for pipeline ${pipeline.name}`);
      res.json(
        budgetAnswer(
          res,
          { run, changes: await readCorrectionAudit(reads, runId) },
          deps.answerBytes ?? ANSWER_BYTES_DEFAULT,
        ),
      );
    },
  );

  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/reconcile",
      operationId: "reconcile",
      summary: "Compare final windows with a fresh recompute from bronze; check the ledger",
      query: rangeQuery,
      response: reconcileReport,
      description: "the report",
      responses: {
        409: json(
          "the range reaches windows whose rows are archived past the correction horizon: `horizon_refused`",
          errorResponse,
        ),
      },
    },
    (pipeline, q, pool) =>
      reconcile(pool, pipeline, q.from && q.to ? { from: q.from, to: q.to } : undefined).catch((e: unknown) => {
        if (e instanceof HorizonRefusedError) throw new HttpError(409, "horizon_refused", e.message);
        throw e;
      }),
  );
}
