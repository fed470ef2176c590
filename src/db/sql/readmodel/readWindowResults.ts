/** Window results of one pipeline, filtered (view `straggler.window_results`; `GET /pipelines/{pipeline}/windows`). */
import { and, eq, gt, isNull, lt, sql, type SQL } from "drizzle-orm";
import { rowsWithinBudget } from "../../rowBudget.js";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { columnsBesidesPipeline, windowResults } from "../../views.js";

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
  /** Only windows after this one in the answer's order (a page's cursor). */
  after?: WindowPosition;
  /** Rows at most. */
  limit: number;
}

/** A window's place in the answer's order: start, key (null: the null group), end; instants ISO 8601. */
export interface WindowPosition {
  start: string;
  key: string | null;
  end: string;
}

/**
 * The condition on view `straggler.window_results` for `pipeline`'s windows that match `filter`:
 * overlapping `[from, to)` (window end after `from`, start before `to`), and the key and status asked for.
 */
export function windowFilter(pipeline: string, filter: Omit<WindowResultsFilter, "limit">): SQL | undefined {
  const w = windowResults;
  return and(
    eq(w.pipeline, pipeline),
    filter.from === undefined ? undefined : gt(w.window_end, filter.from),
    filter.to === undefined ? undefined : lt(w.window_start, filter.to),
    filter.key === undefined ? undefined : eq(w.group_key, filter.key),
    filter.status === undefined ? undefined : eq(w.status, filter.status),
    filter.nullKey ? isNull(w.group_key) : undefined,
    filter.after === undefined
      ? undefined
      : sql`(${w.window_start}, ${w.group_key} IS NULL, coalesce(${w.group_key}, ''), ${w.window_end}) > (${filter.after.start}::timestamptz, ${filter.after.key === null}, ${filter.after.key ?? ""}, ${filter.after.end}::timestamptz)`,
  );
}

/** The answer's order, total: window start, key (the null group last, as `ORDER BY group_key` puts it), window end. */
const windowOrder = () => [
  windowResults.window_start,
  sql`${windowResults.group_key} IS NULL`,
  windowResults.group_key,
  windowResults.window_end,
];

/** What a window row's JSON adds to its text (`octet_length(row::text)`): its column names and quotes, bytes. */
const WINDOW_ROW_JSON_BYTES = 320;

/**
 * The pipeline's windows overlapping `[from, to)`, by window start, then key (the null group last), then end; after `filter.after` when given.
 * Not prepared: its text depends on the filters given.
 * @param budget when given, only the first rows whose text fits in `budget.bytes` are fetched
 *   (their sizes are read first, src/http/answerBudget.ts), and `budget.truncated` is set when
 *   rows were left out
 * @returns rows keyed by the view's column names (`pipeline` left out)
 * @throws the database's error when it cannot be reached
 */
export async function readWindowResults(
  client: Queryable,
  pipeline: string,
  filter: WindowResultsFilter,
  budget?: { bytes: number; truncated: boolean },
) {
  const w = windowResults;
  let limit = filter.limit;
  if (budget !== undefined) {
    const sizes = await execute(
      orm(client)
        .select({ bytes: sql<number>`octet_length(window_results::text)`.mapWith(Number) })
        .from(w)
        .where(windowFilter(pipeline, filter))
        .orderBy(...windowOrder())
        .limit(filter.limit),
    );
    const fit = rowsWithinBudget(
      sizes.map((s) => s.bytes),
      budget.bytes,
      WINDOW_ROW_JSON_BYTES,
    );
    if (fit.truncated) budget.truncated = true;
    limit = Math.max(1, fit.limit);
  }
  return execute(
    orm(client)
      .select(columnsBesidesPipeline(w))
      .from(w)
      .where(windowFilter(pipeline, filter))
      .orderBy(...windowOrder())
      .limit(limit),
  );
}
