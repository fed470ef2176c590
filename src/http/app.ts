/**
 * The REST API (express). Routes get their IO through `ApiDeps`; errors are
 * JSON `{ error, message }` with a 4xx/5xx status, never a stack trace.
 */
import express, { type NextFunction, type Request, type Response } from "express";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import { pipelineStatus } from "../stream/status.js";

export interface ApiDeps {
  pool: Pool;
  pipelines: PipelineConfig[];
  log: Logger;
}

export function createApp(deps: ApiDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");

  app.get("/health", async (_req, res) => {
    try {
      await deps.pool.query("SELECT 1");
      res.json({ status: "ok", database: "reachable" });
    } catch {
      res.status(503).json({ status: "unhealthy", database: "unreachable" });
    }
  });

  app.get("/pipelines", async (_req, res, next) => {
    try {
      res.json(await Promise.all(deps.pipelines.map((p) => pipelineStatus(deps.pool, p.name))));
    } catch (e) {
      next(e);
    }
  });

  app.use((_req, res) => res.status(404).json({ error: "not_found", message: "no such route" }));
  app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => {
    deps.log.error({ err }, "request failed");
    res.status(500).json({ error: "internal", message: "internal error; see the service log" });
  });
  return app;
}
