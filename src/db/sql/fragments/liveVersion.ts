/**
 * The live results version of a pipeline in SQL (drizzle/0051): `straggler.window_results_table` holds every
 * version's windows under its number, and the live one is `straggler.results_version(pipeline)` (policy_versions'
 * live row; 0 before one is recorded). Wrapped in a scalar subquery so that PostgreSQL evaluates it once a
 * statement (an InitPlan) and uses it as an index key, never once a row.
 * @param pipeline the SQL expression naming the pipeline, usually a parameter such as `$1`
 */
export const liveVersion = (pipeline = "$1"): string => `(SELECT straggler.results_version(${pipeline}))`;
