/**
 * The change feed's rows (`straggler.window_changes`, docs/change-feed.md) as
 * the statements that change the results write them: an `INSERT … SELECT`
 * over what the statement already computed, as a data-modifying CTE beside
 * the MERGE or upsert (same statement, same snapshot, same transaction), so a
 * change is in the feed exactly when the results hold it. Never a trigger: a
 * statement-level trigger re-reading the results cost a fifth to two fifths
 * of a replay; these CTEs read only the batch's own rows.
 *
 * Only column names reach the SQL text, never user input.
 */

/** The columns a window's change row fills, in the order `changeRow` gives their values. */
export const CHANGE_COLUMNS =
  "pipeline, change, group_key, window_start, window_end, revision, count_before, sum_before, min_before, max_before, count_after, sum_after, min_after, max_after";

/**
 * The value list of `CHANGE_COLUMNS`: `pipeline` and `change` SQL expressions, the window's
 * `key`, `start`, `end`, `revision` expressions, and the aggregates before and after as four
 * expressions each (count, sum, min, max; all null for none).
 */
export function changeRow(c: {
  pipeline: string;
  change: string;
  key: string;
  start: string;
  end: string;
  revision: string;
  before: readonly string[] | null;
  after: readonly string[] | null;
}): string {
  const none = ["NULL::bigint", "NULL::numeric", "NULL::numeric", "NULL::numeric"];
  return [c.pipeline, c.change, c.key, c.start, c.end, c.revision, ...(c.before ?? none), ...(c.after ?? none)].join(
    ", ",
  );
}

/** The four stored aggregates of the results row (or copy) aliased `alias`, as `changeRow`'s before or after. */
export const stored = (alias: string): string[] =>
  ["event_count", "value_sum", "value_min", "value_max"].map((c) => `${alias}.${c}`);
