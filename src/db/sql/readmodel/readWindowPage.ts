/** One page of a pipeline's window results, with the number of windows the filter matches (view `straggler.window_results`), for the pipeline page. */
import { count } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { columnsBesidesPipeline, windowResults } from "../../views.js";
import { windowFilter, type WindowResultsFilter } from "./readWindowResults.js";

/**
 * The windows overlapping `[from, to)` that match the filter (as `readWindowResults`: window end after
 * `from`, start before `to`), by window start then key: `limit` of them after skipping `offset`.
 * Not prepared: its text depends on the filters given.
 * @param knownTotal the windows the filter matches when the caller has counted them already (the
 *   unfiltered total is the status's windows by status, from the same view): no count is run then
 * @returns `total`, the windows the filter matches, and the page's rows keyed by the view's column names (`pipeline` left out)
 * @throws the database's error when it cannot be reached
 */
export async function readWindowPage(
  client: Queryable,
  pipeline: string,
  filter: WindowResultsFilter & { offset: number },
  knownTotal?: number,
) {
  const w = windowResults;
  const where = windowFilter(pipeline, filter);
  const db = orm(client);
  const [totals, rows] = await Promise.all([
    knownTotal !== undefined ? [{ n: knownTotal }] : execute(db.select({ n: count() }).from(w).where(where)),
    execute(
      db
        .select(columnsBesidesPipeline(w))
        .from(w)
        .where(where)
        .orderBy(w.window_start, w.group_key)
        .limit(filter.limit)
        .offset(filter.offset),
    ),
  ]);
  return { total: totals[0]?.n ?? 0, rows };
}
