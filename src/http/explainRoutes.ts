/** `GET /pipelines/{pipeline}/windows/history`: every revision of one window (src/observe/explain.ts). */
import { explainWindow, ExplainRequestError } from "../observe/explain.js";
import { explainQuery, explainResponse } from "./explainQuery.js";
import { addPipelineRead, type RouteContext } from "./context.js";
import { HttpError } from "./errors.js";

/**
 * Adds the window history route. Query: `start` (ISO 8601), `key` or `nullKey=true`; a start
 * that is no window's start (or no session's instant), or a key missing or given where the
 * pipeline has none, is a 400 naming it.
 */
export function addExplainRoutes(ctx: RouteContext): void {
  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/windows/history",
      operationId: "getWindowHistory",
      summary:
        "Every revision of one window in order (value before and after, status, cause: micro-batch, correction run, cutover, hold, release), the late events each correction recovered and the quarantined rows that would have fallen in it",
      query: explainQuery,
      response: explainResponse,
      description: "the window's history",
    },
    async (pipeline, q, pool) => {
      try {
        return await explainWindow(pool, pipeline, q.start, q.nullKey ? null : q.key);
      } catch (e) {
        if (e instanceof ExplainRequestError) throw new HttpError(400, "invalid_request", `query.${e.message}`);
        throw e;
      }
    },
  );
}
