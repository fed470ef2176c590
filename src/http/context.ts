/** What the REST API is built from (`createApp`, src/app.ts), and what its route modules share: the context, the shape of a read route. */
import type express from "express";
import type { Request } from "express";
import type { PipelineConfig } from "../config/pipelines.js";
import type { CorrectionRequest, CorrectionSummary } from "../correction/correct.js";
import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import type { z } from "zod";
import type { ResponseConfig } from "@asteasolutions/zod-to-openapi";
import { parseOr400 } from "./errors.js";
import { errors, json, type ApiRoutes } from "./openapi.js";
import { pipelineParams } from "./schemas.js";
import { readsOf } from "./readBudget.js";
import { ANSWER_BYTES_DEFAULT, budgetAnswer, TRUNCATED_HEADER } from "./answerBudget.js";

/** The byte budget of one read's answer (src/http/answerBudget.ts): `bytes` to stay within; a read that cut its rows itself sets `truncated`. */
export interface ReadBudgetOfAnswer {
  bytes: number;
  truncated: boolean;
  /**
   * Set by a read whose rows can be continued: the cursor (an opaque string for the route's `after`
   * parameter) that continues after `row`, and the page's row limit. When the answer was cut to the
   * budget or filled the limit, its last row's cursor goes out as the `Straggler-Next` header.
   */
  next?: { cursorOf: (row: unknown) => string; limit: number };
}

/** The header that carries the cursor of the next page (`?after=…`) of a read cut short or full. */
const NEXT_HEADER = "Straggler-Next";

export interface ApiDeps {
  pool: Pool;
  pipelines: PipelineConfig[];
  log: Logger;
  token: string | undefined;
  /** Largest accepted request body, bytes. */
  maxBodyBytes?: number;
  /** Largest events body held in memory (and landed by group commit), decoded bytes; a larger one is spooled to a temporary file (src/http/body.ts). Default 256 KiB. */
  memoryBodyBytes?: number;
  /**
   * Small event bodies of one pipeline that arrive together land in one transaction (group commit,
   * src/ingest/groupCommit.ts); false: one transaction per request. Default true.
   */
  groupCommit?: boolean;
  /** Connections for `GET /health` only (the service gives it a pool of its own); default `pool`. */
  healthPool?: Pool;
  /**
   * Connections for reads only (src/http/readBudget.ts; the service gives them a pool of their own
   * with a statement_timeout). Given, reads run on it and at most `readConcurrency` are answered
   * at once; default: reads run on `pool`, unbounded.
   */
  readPool?: Pool;
  /** Reads answered at once when `readPool` is given; default 4 (`READ_CONCURRENCY_DEFAULT`). */
  readConcurrency?: number;
  /** `STRAGGLER_READ_TOKEN`: when set, reads need it or `token` as their bearer token. */
  readToken?: string;
  /** Largest answer of a list route, bytes of JSON (src/http/answerBudget.ts); default 4 MiB. */
  answerBytes?: number;
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

/**
 * Adds `GET path` for one pipeline: its query parsed with `query` (400 naming
 * the bad field), answered 200 with what `read` returns for the pipeline (run on the request's read
 * pool: `readsOf`, src/http/readBudget.ts; cut to the answer's byte budget, src/http/answerBudget.ts); documented with `response` and the read routes' error answers.
 */
export function addPipelineRead<Q extends z.ZodObject>(
  { routes, pipelineOf, deps }: RouteContext,
  spec: {
    path: string;
    operationId: string;
    summary: string;
    query: Q;
    response: z.ZodType;
    description: string;
    responses?: Record<string, ResponseConfig>;
  },
  read: (pipeline: PipelineConfig, query: z.infer<Q>, pool: Pool, budget: ReadBudgetOfAnswer) => Promise<unknown>,
): void {
  routes.add(
    {
      method: "get",
      path: spec.path,
      operationId: spec.operationId,
      summary: spec.summary,
      request: { params: pipelineParams, query: spec.query },
      responses: {
        200: {
          ...json(
            `${spec.description}; a list cut to the answer's byte budget (about 4 MiB) carries the header Straggler-Truncated: true and Straggler-Rows (the rows sent); where the route takes \`after\`, a page cut short or full carries Straggler-Next, the cursor of the next page`,
            spec.response,
          ),
        },
        ...errors([400, 404, 500, 503]),
        ...spec.responses,
      },
    },
    async (req, res) => {
      const pipeline = pipelineOf(req);
      const budget: ReadBudgetOfAnswer = { bytes: deps.answerBytes ?? ANSWER_BYTES_DEFAULT, truncated: false };
      const answer = await read(pipeline, parseOr400(spec.query, req.query, "query"), readsOf(req, deps.pool), budget);
      const body = budgetAnswer(res, answer, budget.bytes, budget.truncated);
      if (
        budget.next &&
        Array.isArray(body) &&
        body.length > 0 &&
        (res.get(TRUNCATED_HEADER) === "true" || body.length >= budget.next.limit)
      ) {
        res.set(NEXT_HEADER, budget.next.cursorOf(body[body.length - 1]));
      }
      res.json(body);
    },
  );
}
