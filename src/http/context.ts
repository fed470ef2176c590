/** What the REST API is built from (`createApp`), and what its route modules share. */
import type express from "express";
import type { Request } from "express";
import type { PipelineConfig } from "../config/pipelines.js";
import type { CorrectionRequest, CorrectionSummary } from "../correction/correct.js";
import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import type { ApiRoutes } from "./openapi.js";

export interface ApiDeps {
  pool: Pool;
  pipelines: PipelineConfig[];
  log: Logger;
  token: string | undefined;
  /** Largest accepted request body, bytes. */
  maxBodyBytes?: number;
  /** Connections for `GET /health` only (the service gives it a pool of its own); default `pool`. */
  healthPool?: Pool;
  /** Runs a correction (the service serialises it with its schedule). */
  correct?: (pipeline: PipelineConfig, req: CorrectionRequest) => Promise<CorrectionSummary>;
}

/** What the route modules share: the deps, the pipeline a path names, the bearer-token guard. */
export interface RouteContext {
  routes: ApiRoutes;
  deps: ApiDeps;
  /** The pipeline `req.params.pipeline` names. @throws HttpError 404 when there is none */
  pipelineOf(req: Request): PipelineConfig;
  auth: express.RequestHandler;
}

