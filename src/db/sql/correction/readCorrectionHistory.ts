/** Correction runs of one pipeline, the latest first (view `straggler.correction_history`; `GET /pipelines/{pipeline}/corrections[/{runId}]`). */
import { and, desc, eq } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { correctionHistory } from "../../views.js";

const READ_CORRECTION_HISTORY = "read_correction_history";
const READ_CORRECTION_RUN = "read_correction_run";

/**
 * @param limit runs at most
 * @returns rows keyed by the view's column names
 * @throws the database's error when it cannot be reached
 */
export async function readCorrectionHistory(client: Queryable, pipeline: string, limit: number) {
  const h = correctionHistory;
  return execute(
    orm(client)
      .select()
      .from(h)
      .where(eq(h.pipeline, pipeline))
      .orderBy(desc(h.run_id))
      .limit(limit)
      .prepare(READ_CORRECTION_HISTORY),
  );
}

/**
 * @returns the run `runId` of `pipeline`, or undefined when the pipeline has no such run
 * @throws the database's error when it cannot be reached
 */
export async function readCorrectionRun(client: Queryable, pipeline: string, runId: number) {
  const h = correctionHistory;
  const rows = await execute(
    orm(client)
      .select()
      .from(h)
      .where(and(eq(h.pipeline, pipeline), eq(h.run_id, runId)))
      .prepare(READ_CORRECTION_RUN),
  );
  return rows[0];
}
