/**
 * The REST API's request logs (pino-http, one line per answered request) and
 * request metrics, and the `GET /metrics` handler (src/observe/metrics.ts).
 */
import type { Express, RequestHandler } from "express";
import { pinoHttp } from "pino-http";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import { readsOf } from "./readBudget.js";
import type { Logger } from "../log.js";
import { createMetrics, type Metrics } from "../observe/metrics.js";

/** Paths polled by machines: logged at debug, not info. */
const POLLED = new Set(["/livez", "/readyz", "/health", "/metrics"]);

/**
 * Logs every request through `log` (info; warn for a 4xx or 5xx answer, whose cause
 * the error handler logs once at error; debug for the probes and `/metrics`) and
 * counts it in the returned metrics. Call before any route.
 */
export function observeRequests(app: Express, pipelines: PipelineConfig[], log: Logger): Metrics {
  const metrics = createMetrics(pipelines);
  app.use(
    pinoHttp({
      logger: log, // its lines are redacted (src/log.ts): credential headers, every known secret
      customLogLevel: (req, res, err) =>
        res.statusCode >= 400 || err ? "warn" : POLLED.has(req.url?.split("?")[0] ?? "") ? "debug" : "info",
    }),
  );
  app.use(metrics.countRequests);
  return metrics;
}

/** `GET /metrics`: every metric in Prometheus text format, database figures read now. */
export function metricsHandler(metrics: Metrics, client: Pool): RequestHandler {
  return async (req, res) => {
    const text = await metrics.scrape(readsOf(req, client));
    res.type(metrics.registry.contentType).send(text);
  };
}
