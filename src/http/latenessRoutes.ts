/** `GET /pipelines/{pipeline}/lateness`: the lateness distribution, the what-if table over candidate delays and the recommended delay. */
import { latenessAdvice } from "../observe/latenessAdvice.js";
import { latenessOptionsOf, latenessQuery, latenessResponse } from "./latenessQuery.js";
import { addPipelineRead, type RouteContext } from "./context.js";

/**
 * Adds the lateness route. Query: `from`, `to` (ISO 8601, event time `[from, to)`), `targetDrop`
 * (`0.1%` or `0.001`), `delay` (durations, repeated or comma-separated), `byKey` (`true`);
 * a bad one is a 400 naming it. The answer is `latenessAdvice`'s (src/observe/latenessAdvice.ts):
 * read from the kept histogram, the replay only for what it cannot answer.
 */
export function addLatenessRoutes(ctx: RouteContext): void {
  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/lateness",
      operationId: "getLateness",
      summary:
        "Lateness (ingestion time - event time) of the accepted rows, what other watermark delays would have dropped over the recorded batches, and the smallest delay under a drop-share target",
      query: latenessQuery,
      response: latenessResponse,
      description: "the lateness report",
    },
    (pipeline, q, pool) => latenessAdvice(pool, pipeline, latenessOptionsOf(q)),
  );
}
