/** Read routes of the pipelines: status, windows, progress, quarantine, sources, failed windows. */
import { z } from "zod";
import { isoToUs } from "../core/timestamps.js";
import { countQuarantineByReason } from "../db/sql/countQuarantineByReason.js";
import { readFailedWindows } from "../db/sql/readFailedWindows.js";
import { readQuarantine } from "../db/sql/readQuarantine.js";
import { readSources } from "../db/sql/readSources.js";
import { readStreamProgress } from "../db/sql/readStreamProgress.js";
import { readWindowResults } from "../db/sql/readWindowResults.js";
import { pipelineStatus, sourceCounts } from "../stream/status.js";
import type { RouteContext } from "./context.js";
import { parseOr400 } from "./errors.js";
import { errors, json } from "./openapi.js";
import { failedWindowRow, pipelineStatusRow, progressRow, quarantineResponse, sourcesResponse, windowRow } from "./responses.js";
import { limitQuery, noQuery, pipelineParams, quarantineQuery, sourcesQuery, windowsQuery } from "./schemas.js";

/** Responses every read route of one pipeline may give besides its 200. */
const readErrors = errors([400, 404, 500, 503]);

export function addPipelineRoutes({ routes, deps, pipelineOf }: RouteContext): void {
  const { pool } = deps;
  routes.add(
    {
      method: "get", path: "/pipelines", summary: "Pipelines with watermark, lag, ledger, window counts and sources by state", request: { query: noQuery },
      responses: { 200: json("pipelines", z.array(pipelineStatusRow)), ...errors([400, 500, 503]) },
    },
    async (req, res) => {
      parseOr400(noQuery, req.query, "query");
      const all = await Promise.all(deps.pipelines.map((pipeline) => pipelineStatus(pool, pipeline.name)));
      res.json(
        all.map((s) => ({
          pipeline: s.pipeline,
          watermark: s.checkpoint?.watermark ?? null,
          maxEventTime: s.checkpoint?.maxEventTime ?? null,
          watermarkLagMs: s.checkpoint?.watermark && s.checkpoint.maxEventTime ? Number(isoToUs(s.checkpoint.maxEventTime) - isoToUs(s.checkpoint.watermark)) / 1000 : null,
          backlogRows: s.backlogRows,
          ledger: s.ledger,
          windows: s.windows,
          numRowsDroppedByWatermark: s.numRowsDroppedByWatermark,
          sources: s.sources,
          failedWindows: s.failedWindows,
        })),
      );
    },
  );

  routes.add(
    { method: "get", path: "/pipelines/{pipeline}/windows", summary: "Window results", request: { params: pipelineParams, query: windowsQuery }, responses: { 200: json("windows", z.array(windowRow)), ...readErrors } },
    async (req, res) => {
      const pipeline = pipelineOf(req);
      const q = parseOr400(windowsQuery, req.query, "query");
      res.json(await readWindowResults(pool, pipeline.name, q));
    },
  );

  routes.add(
    {
      method: "get", path: "/pipelines/{pipeline}/progress", summary: "Latest micro-batch progress", request: { params: pipelineParams, query: limitQuery },
      responses: { 200: json("batches, latest first", z.array(progressRow)), ...readErrors },
    },
    async (req, res) => {
      const pipeline = pipelineOf(req);
      const q = parseOr400(limitQuery, req.query, "query");
      res.json(await readStreamProgress(pool, pipeline.name, q.limit));
    },
  );

  routes.add(
    {
      method: "get", path: "/pipelines/{pipeline}/quarantine", summary: "Quarantined rows, by reason", request: { params: pipelineParams, query: quarantineQuery },
      responses: { 200: json("counts by reason, and the rows latest first", quarantineResponse), ...readErrors },
    },
    async (req, res) => {
      const pipeline = pipelineOf(req);
      const q = parseOr400(quarantineQuery, req.query, "query");
      const [byReason, rows] = await Promise.all([countQuarantineByReason(pool, pipeline.name), readQuarantine(pool, pipeline.name, q)]);
      res.json({ byReason, rows });
    },
  );

  routes.add(
    {
      method: "get", path: "/pipelines/{pipeline}/sources",
      summary: "Every source (file, request, stdin, replay micro-batch) with its state: landed, refused (with its reason), changed_after_landing, waiting_to_settle",
      request: { params: pipelineParams, query: sourcesQuery },
      responses: { 200: json("counts by state, and the sources most recently seen first", sourcesResponse), ...readErrors },
    },
    async (req, res) => {
      const pipeline = pipelineOf(req);
      const q = parseOr400(sourcesQuery, req.query, "query");
      const [byState, rows] = await Promise.all([sourceCounts(pool, pipeline.name), readSources(pool, pipeline.name, q)]);
      res.json({ byState, rows });
    },
  );

  routes.add(
    {
      method: "get", path: "/pipelines/{pipeline}/failed-windows",
      summary: "Windows whose aggregate failed (a data exception such as a numeric overflow): their rows were quarantined as INVALID_VALUE and the pipeline went on",
      request: { params: pipelineParams, query: limitQuery },
      responses: { 200: json("failed windows, latest first; group_key null for the null group", z.array(failedWindowRow)), ...readErrors },
    },
    async (req, res) => {
      const pipeline = pipelineOf(req);
      const q = parseOr400(limitQuery, req.query, "query");
      res.json(await readFailedWindows(pool, pipeline.name, q.limit));
    },
  );
}
