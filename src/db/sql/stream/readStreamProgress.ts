/** The latest micro-batches of one pipeline (view `straggler.stream_progress`; `GET /pipelines/{pipeline}/progress`). */
import { desc, eq } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { streamProgress } from "../../views.js";

const READ_STREAM_PROGRESS = "read_stream_progress";

/**
 * @param limit batches at most, the latest first
 * @returns rows keyed by the view's column names
 * @throws the database's error when it cannot be reached
 */
export async function readStreamProgress(client: Queryable, pipeline: string, limit: number) {
  return execute(
    orm(client)
      .select()
      .from(streamProgress)
      .where(eq(streamProgress.pipeline, pipeline))
      .orderBy(desc(streamProgress.batch_id))
      .limit(limit)
      .prepare(READ_STREAM_PROGRESS),
  );
}
