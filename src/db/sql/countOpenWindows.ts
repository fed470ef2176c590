/** Counts a pipeline's open (not final) windows: Spark's state rows (`numRowsTotal`). */
import type { Queryable } from "../pool.js";

const COUNT_OPEN_WINDOWS_SQL = "SELECT count(*)::int AS n FROM straggler.window_results_table WHERE pipeline = $1 AND NOT is_final";

export async function countOpenWindows(client: Queryable, pipeline: string): Promise<number> {
  return (await client.query(COUNT_OPEN_WINDOWS_SQL, [pipeline])).rows[0].n as number;
}
