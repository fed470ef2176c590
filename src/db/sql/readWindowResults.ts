/** Window results of one pipeline, filtered (view `straggler.window_results`; `GET /pipelines/{pipeline}/windows`). */
import { and, eq, gt, isNull, lt } from "drizzle-orm";
import { execute, orm } from "../orm.js";
import type { Queryable } from "../pool.js";
import { columnsBesidesPipeline, windowResults } from "../views.js";

export interface WindowResultsFilter {
  /** ISO instant: only windows ending after it. */
  from?: string;
  /** ISO instant: only windows starting before it. */
  to?: string;
  /** Only this group key (as stored; the null group is `nullKey`). */
  key?: string;
  /** Only the null group. */
  nullKey?: boolean;
  status?: string;
  /** Rows at most. */
  limit: number;
}

/**
 * The pipeline's windows overlapping `[from, to)`, by window start then key.
 * Not prepared: its text depends on the filters given.
 * @returns rows keyed by the view's column names (`pipeline` left out)
 * @throws the database's error when it cannot be reached
 */
export async function readWindowResults(client: Queryable, pipeline: string, filter: WindowResultsFilter) {
  const w = windowResults;
  return execute(
    orm(client)
      .select(columnsBesidesPipeline(w))
      .from(w)
      .where(
        and(
          eq(w.pipeline, pipeline),
          filter.from === undefined ? undefined : gt(w.window_end, filter.from),
          filter.to === undefined ? undefined : lt(w.window_start, filter.to),
          filter.key === undefined ? undefined : eq(w.group_key, filter.key),
          filter.status === undefined ? undefined : eq(w.status, filter.status),
          filter.nullKey ? isNull(w.group_key) : undefined,
        ),
      )
      .orderBy(w.window_start, w.group_key)
      .limit(filter.limit),
  );
}
