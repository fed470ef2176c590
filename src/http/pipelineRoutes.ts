/** Read routes of the pipelines: status, windows, progress, quarantine, sources, failed windows, retractions. */
import { z } from "zod";
import { isoToUs } from "../core/instants.js";
import { countQuarantineByReason } from "../db/sql/stream/countQuarantineByReason.js";
import { readFailedWindows } from "../db/sql/stream/readFailedWindows.js";
import { readQuarantine } from "../db/sql/stream/readQuarantine.js";
import { readRetractions } from "../db/sql/correction/readRetractions.js";
import { readSources } from "../db/sql/ingest/readSources.js";
import { readStreamProgress } from "../db/sql/stream/readStreamProgress.js";
import { readWindowResults } from "../db/sql/readmodel/readWindowResults.js";
import { alertViews } from "../observe/alerts.js";
import { pipelineExtras } from "../observe/pipelineExtras.js";
import { countSourcesByState } from "../db/sql/ingest/countSourcesByState.js";
import { readOpenHold } from "../db/sql/lifecycle/holds.js";
import { checkPolicy } from "../guards/index.js";
import { pipelineStatus } from "../stream/status.js";
import { addPipelineRead, type RouteContext } from "./context.js";
import { readsOf } from "./readBudget.js";
import { parseOr400 } from "./errors.js";
import { errors, json } from "./openapi.js";
import {
  failedWindowRow,
  pipelineStatusRow,
  progressRow,
  quarantineResponse,
  retractionRow,
  sourcesResponse,
  windowRow,
} from "./responses.js";
import { windowCursor } from "./windowCursor.js";
import { limitQuery, noQuery, quarantineQuery, retractionsQuery, sourcesQuery, windowsQuery } from "./schemas.js";

export function addPipelineRoutes(ctx: RouteContext): void {
  const { routes, deps } = ctx;
  const { pool } = deps;
  routes.add(
    {
      method: "get",
      path: "/pipelines",
      operationId: "listPipelines",
      summary:
        "Pipelines with watermark, lag, ledger, window counts, sources by state, alerts and policy (live, unrecorded or refused)",
      request: { query: noQuery },
      responses: { 200: json("pipelines", z.array(pipelineStatusRow)), ...errors([400, 500, 503]) },
    },
    async (req, res) => {
      parseOr400(noQuery, req.query, "query");
      const pool = readsOf(req, deps.pool);
      const all = await Promise.all(
        deps.pipelines.map(async (pipeline) => ({
          ...(await pipelineStatus(pool, pipeline.name)),
          alerts: await alertViews(pool, pipeline),
          policy: await checkPolicy(pool, pipeline),
          hold: (await readOpenHold(pool, pipeline.name)) ?? null,
          ...(await pipelineExtras(pool, pipeline)),
        })),
      );
      res.json(
        all.map((s) => ({
          pipeline: s.pipeline,
          owner: s.owner,
          watermark: s.checkpoint?.watermark ?? null,
          maxEventTime: s.checkpoint?.maxEventTime ?? null,
          watermarkLagMs:
            s.checkpoint?.watermark && s.checkpoint.maxEventTime
              ? Number(isoToUs(s.checkpoint.maxEventTime) - isoToUs(s.checkpoint.watermark)) / 1000
              : null,
          backlogRows: s.backlogRows,
          ledger: s.ledger,
          windows: s.windows,
          numRowsDroppedByWatermark: s.numRowsDroppedByWatermark,
          sources: s.sources,
          failedWindows: s.failedWindows,
          alerts: s.alerts,
          policy: s.policy,
          hold: s.hold,
          inputs: s.checkpoint?.inputs ?? [],
          watermarkHolder: s.watermarkHolder,
          lastReconcile: s.lastReconcile,
        })),
      );
    },
  );

  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/windows",
      operationId: "listWindows",
      summary: "Window results",
      query: windowsQuery,
      response: z.array(windowRow),
      description: "windows",
    },
    (pipeline, q, pool, budget) => {
      budget.next = { cursorOf: windowCursor, limit: q.limit };
      return readWindowResults(pool, pipeline.name, q, budget);
    },
  );
  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/progress",
      operationId: "listProgress",
      summary: "Latest micro-batch progress",
      query: limitQuery,
      response: z.array(progressRow),
      description: "batches, latest first",
    },
    (pipeline, q, pool) => readStreamProgress(pool, pipeline.name, q.limit),
  );
  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/quarantine",
      operationId: "listQuarantine",
      summary: "Quarantined rows, by reason",
      query: quarantineQuery,
      response: quarantineResponse,
      description: "counts by reason, and the rows latest first",
    },
    async (pipeline, q, pool) => {
      const [byReason, rows] = await Promise.all([
        countQuarantineByReason(pool, pipeline.name),
        readQuarantine(pool, pipeline.name, q),
      ]);
      return { byReason, rows };
    },
  );
  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/sources",
      operationId: "listSources",
      summary:
        "Every source (file, request, stdin, replay micro-batch) with its state: landed, refused (with its reason), changed_after_landing, waiting_to_settle",
      query: sourcesQuery,
      response: sourcesResponse,
      description: "counts by state, and the sources most recently seen first",
    },
    async (pipeline, q, pool) => {
      const [byState, rows] = await Promise.all([
        countSourcesByState(pool, pipeline.name),
        readSources(pool, pipeline.name, q),
      ]);
      return { byState, rows };
    },
  );
  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/failed-windows",
      operationId: "listFailedWindows",
      summary:
        "Windows whose aggregate failed (a data exception such as a numeric overflow): their rows were quarantined as INVALID_VALUE and the pipeline went on",
      query: limitQuery,
      response: z.array(failedWindowRow),
      description: "failed windows, latest first; group_key null for the null group",
    },
    (pipeline, q, pool) => readFailedWindows(pool, pipeline.name, q.limit),
  );
  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/retractions",
      operationId: "listRetractions",
      summary:
        "Session rows removed from the results (extended or merged by the stream, replaced by a correction run), oldest first: follow with after=<last id read>. With feed.enabled they are also `retracted` changes of the change feed (/changes), which carries every other change too",
      query: retractionsQuery,
      response: z.array(retractionRow),
      description:
        'retractions with an id above `after`, by id; group_key null for the null group. Each retracts the row it names and every row of its key inside its replacement (replaced_by_start, replaced_by_end) other than the replacement: the stream prunes the earlier retractions a new one covers (README "Session windows")',
    },
    (pipeline, q, pool, budget) => readRetractions(pool, pipeline.name, q, budget),
  );
}
