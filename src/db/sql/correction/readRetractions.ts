/** Session rows removed from one pipeline's results after a given id, oldest first (view `straggler.retractions`; `GET /pipelines/{pipeline}/retractions`). */
import { and, asc, eq, gt, sql } from "drizzle-orm";
import { rowsWithinBudget } from "../../rowBudget.js";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { columnsBesidesPipeline, retractions } from "../../views.js";

const READ_RETRACTIONS = "read_retractions";

/** What a retraction row's JSON adds to its text: its column names and quotes, bytes. */
const RETRACTION_ROW_JSON_BYTES = 320;

/**
 * @param q `after`: only retractions with a greater `id` (0: from the first); `limit`: rows at most
 * @param budget when given, only the first rows whose text fits in `budget.bytes` are fetched
 *   (sizes read first), and `budget.truncated` is set when rows were left out: the consumer goes
 *   on with `after` = the last id it got, as always
 * @returns rows keyed by the view's column names, by `id`
 * @throws the database's error when it cannot be reached
 */
export async function readRetractions(
  client: Queryable,
  pipeline: string,
  q: { after: number; limit: number },
  budget?: { bytes: number; truncated: boolean },
) {
  const r = retractions;
  let limit = q.limit;
  if (budget !== undefined) {
    const sizes = await execute(
      orm(client)
        .select({ bytes: sql<number>`octet_length(retractions::text)`.mapWith(Number) })
        .from(r)
        .where(and(eq(r.pipeline, pipeline), gt(r.id, q.after)))
        .orderBy(asc(r.id))
        .limit(q.limit),
    );
    const fit = rowsWithinBudget(
      sizes.map((s) => s.bytes),
      budget.bytes,
      RETRACTION_ROW_JSON_BYTES,
    );
    if (fit.truncated) budget.truncated = true;
    limit = Math.max(1, fit.limit);
  }
  return execute(
    orm(client)
      .select(columnsBesidesPipeline(r))
      .from(r)
      .where(and(eq(r.pipeline, pipeline), gt(r.id, q.after)))
      .orderBy(asc(r.id))
      .limit(limit)
      .prepare(READ_RETRACTIONS),
  );
}
