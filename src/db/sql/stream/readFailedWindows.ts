/** Windows of one pipeline whose aggregate failed, the latest first (view `straggler.failed_windows`; `GET /pipelines/{pipeline}/failed-windows`). */
import { desc, eq } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { failedWindows } from "../../views.js";

const READ_FAILED_WINDOWS = "read_failed_windows";

/**
 * @param limit rows at most
 * @returns rows keyed by the view's column names
 * @throws the database's error when it cannot be reached
 */
export async function readFailedWindows(client: Queryable, pipeline: string, limit: number) {
  return execute(
    orm(client)
      .select()
      .from(failedWindows)
      .where(eq(failedWindows.pipeline, pipeline))
      .orderBy(desc(failedWindows.failure_id))
      .limit(limit)
      .prepare(READ_FAILED_WINDOWS),
  );
}
