/** Session rows removed from one pipeline's results after a given id, oldest first (view `straggler.retractions`; `GET /pipelines/{pipeline}/retractions`). */
import { and, asc, eq, gt } from "drizzle-orm";
import { execute, orm } from "../orm.js";
import type { Queryable } from "../pool.js";
import { columnsBesidesPipeline, retractions } from "../views.js";

const READ_RETRACTIONS = "read_retractions";

/**
 * @param q `after`: only retractions with a greater `id` (0: from the first); `limit`: rows at most
 * @returns rows keyed by the view's column names, by `id`
 * @throws the database's error when it cannot be reached
 */
export async function readRetractions(client: Queryable, pipeline: string, q: { after: number; limit: number }) {
  const r = retractions;
  return execute(
    orm(client).select(columnsBesidesPipeline(r)).from(r).where(and(eq(r.pipeline, pipeline), gt(r.id, q.after))).orderBy(asc(r.id)).limit(q.limit).prepare(READ_RETRACTIONS),
  );
}
