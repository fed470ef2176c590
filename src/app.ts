/**
 * The service's express app: the REST API (src/http) with the pages for people under `/ui`
 * (src/ui), which are not in the API document. Requests are validated with zod; errors are JSON
 * `{ error, message }` with a 4xx status naming the bad field (503 while the
 * database is away), never a stack trace. Mutating routes need the bearer
 * token. `GET /openapi.json` describes every route: each is declared once,
 * with its schemas, in `ApiRoutes` (routes by resource: src/http/`pipelineRoutes.ts`,
 * `eventRoutes.ts`, `correctionRoutes.ts`). A documented path asked with another
 * method is a 405 with `Allow`; a 401 carries `WWW-Authenticate: Bearer`. Express 5 passes a handler's
 * rejected promise to the error handler.
 */
import express from "express";
import { metricsHandler, observeRequests } from "./http/requestMetrics.js";
import { requireToken } from "./http/auth.js";
import { readBudget } from "./http/readBudget.js";
import type { ApiDeps, RouteContext } from "./http/context.js";
import { addCorrectionRoutes } from "./http/correctionRoutes.js";
import { errorHandler, HttpError, parseOr400 } from "./http/errors.js";
import { noQuery } from "./http/schemas.js";
import { addEventRoutes } from "./http/eventRoutes.js";
import { addHealthRoutes } from "./http/healthRoutes.js";
import { addFeedRoutes } from "./http/feedRoutes.js";
import { addHoldRoutes } from "./http/holdRoutes.js";
import { addRebuildRoutes } from "./http/rebuildRoutes.js";
import { addLatenessRoutes } from "./http/latenessRoutes.js";
import { addExplainRoutes } from "./http/explainRoutes.js";
import { ApiRoutes, errors, json } from "./http/openapi.js";
import { addPipelineRoutes } from "./http/pipelineRoutes.js";
import { metricsText, openApiResponse } from "./http/responses.js";
import { uiRouter } from "./ui/routes.js";
import { createLogger } from "./log.js";

export type { ApiDeps } from "./http/context.js";

export function createApp(deps: ApiDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("query parser", "simple");
  const metrics = observeRequests(app, deps.pipelines, deps.log);
  // Reads get a budget of their own (connections, concurrency, time, a token when configured).
  app.use(
    readBudget({
      pool: deps.readPool ?? deps.pool,
      cancelPool: deps.healthPool ?? deps.pool,
      concurrency: deps.readPool === undefined ? Number.POSITIVE_INFINITY : deps.readConcurrency,
      readToken: deps.readToken,
      writeToken: deps.token,
    }),
  );
  const byName = new Map(deps.pipelines.map((pipeline) => [pipeline.name, pipeline]));
  const routes = new ApiRoutes(app);
  const ctx: RouteContext = {
    routes,
    deps,
    pipelineOf(req) {
      const pipeline = byName.get(String(req.params.pipeline));
      if (!pipeline)
        throw new HttpError(
          404,
          "not_found",
          `no pipeline named ${JSON.stringify(String(req.params.pipeline).slice(0, 100))}`,
        );
      return pipeline;
    },
    auth: requireToken(deps.token),
  };

  addHealthRoutes(ctx); // /livez, /readyz, /health: on connections of their own, answering while every pooled one is busy
  routes.add(
    {
      method: "get",
      path: "/openapi.json",
      operationId: "getOpenApiDocument",
      summary: "This document",
      request: { query: noQuery },
      responses: { 200: json("the OpenAPI 3.1 document", openApiResponse), ...errors([400]) },
    },
    (req, res) => {
      parseOr400(noQuery, req.query, "query");
      res.json(document);
    },
  );
  routes.add(
    {
      method: "get",
      path: "/metrics",
      operationId: "getMetrics",
      summary: "Prometheus metrics (README: Metrics and alerts)",
      responses: {
        200: {
          description: "every metric, Prometheus text format 0.0.4",
          content: { "text/plain": { schema: metricsText } },
        },
        ...errors([500, 503]),
      },
    },
    metricsHandler(metrics, deps.pool),
  );
  addPipelineRoutes(ctx);
  addEventRoutes(ctx);
  addCorrectionRoutes(ctx);
  addLatenessRoutes(ctx);
  addExplainRoutes(ctx);
  addHoldRoutes(ctx);
  addFeedRoutes(ctx);
  addRebuildRoutes(ctx);
  app.use("/ui", uiRouter(deps, ctx.pipelineOf)); // pages for people, not in the API document (src/ui)
  const document = routes.document();
  app.locals.openApiDocument = document;

  app.use(routes.methodNotAllowed());
  app.use((_req, res) => {
    res.status(404).json({ error: "not_found", message: "no such route; see GET /openapi.json" });
  });
  app.use(errorHandler(deps.log));
  return app;
}

/**
 * The OpenAPI 3.1 document `GET /openapi.json` serves, built without a database or pipelines (the
 * document depends on neither): for tooling such as `scripts/openapi.ts`.
 */
export function apiDocument(): object {
  const app = createApp({ pool: undefined as never, pipelines: [], log: createLogger("silent"), token: undefined });
  return app.locals.openApiDocument as object;
}
