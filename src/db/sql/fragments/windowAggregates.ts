/**
 * The four aggregates a window holds (DESIGN §5): event count, and the sum,
 * minimum and maximum of `value` (exact `numeric`; a window whose rows have
 * no value keeps null for sum, min and max). Written once here for the
 * stream's MERGE, the correction's recompute and reconcile's comparison.
 *
 * Computed aggregates are named `n`, `s`, `lo`, `hi`; stored ones are the
 * columns `event_count`, `value_sum`, `value_min`, `value_max` of
 * `straggler.window_results_table`. Only column names and aliases reach the
 * SQL text, never user input.
 */

/** The stored aggregate columns, in the order of `AGGREGATE_ALIASES`. */
const AGGREGATE_COLUMNS = ["event_count", "value_sum", "value_min", "value_max"] as const;

/** The computed aggregates' aliases, in the order of `AGGREGATE_COLUMNS`. */
const AGGREGATE_ALIASES = ["n", "s", "lo", "hi"] as const;

/**
 * `count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi` over the value
 * column `value` (e.g. `"value"`, `"b.value"`), for a `SELECT … GROUP BY` window.
 */
export function aggregateWindow(value = "value"): string {
  return `count(*) AS n, sum(${value}) AS s, min(${value}) AS lo, max(${value}) AS hi`;
}

/**
 * `aggregateWindow`'s four over rows that each hold some rows' aggregates already (columns `n`, `s`, `lo`, `hi`,
 * the session's pairs table: src/db/sql/fragments/batchPairs.ts), for a `SELECT … GROUP BY` window: the counts
 * added (bigint, as count(*) gives it), the sums added, the least min and greatest max (nulls ignored, as the
 * aggregates over the rows themselves ignore null values).
 */
export function foldAggregates(): string {
  return "sum(n)::bigint AS n, sum(s) AS s, min(lo) AS lo, max(hi) AS hi";
}

/** `a.event_count, a.value_sum, a.value_min, a.value_max`: the stored aggregates of the results row aliased `alias` (bare columns when omitted). */
export function storedAggregates(alias?: string): string {
  return AGGREGATE_COLUMNS.map((c) => (alias ? `${alias}.${c}` : c)).join(", ");
}

/** `a.n, a.s, a.lo, a.hi`: the computed aggregates of the row source aliased `alias` (bare aliases when omitted). */
export function computedAggregates(alias?: string): string {
  return AGGREGATE_ALIASES.map((c) => (alias ? `${alias}.${c}` : c)).join(", ");
}

/**
 * The `SET` list folding a batch's aggregates (`source`'s n, s, lo, hi) into
 * a stored window (`target`'s columns) in update mode: counts add, a sum stays
 * as it was when the batch brought no value (and starts from 0 when the
 * window had none), min and max ignore nulls (`least`/`greatest`).
 */
export function combineAggregates(target: string, source: string): string {
  return `event_count = ${target}.event_count + ${source}.n,
          value_sum = CASE WHEN ${source}.s IS NULL THEN ${target}.value_sum ELSE coalesce(${target}.value_sum, 0) + ${source}.s END,
          value_min = least(${target}.value_min, ${source}.lo),
          value_max = greatest(${target}.value_max, ${source}.hi)`;
}
