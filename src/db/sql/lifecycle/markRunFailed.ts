/** Records a correction run's failure outside its rolled-back transaction (src/correction/runLease.ts). */
import { and, eq, sql } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { correctionRuns } from "../../schemaRecords.js";

/**
 * Marks the run `failed` with `error` and its duration (ms), only while it is `running`.
 * @returns false when the run is no longer `running` (nothing written)
 * @throws the database's error when it cannot be reached
 */
export async function markRunFailed(
  client: Queryable,
  runId: number,
  error: string,
  durationMs: number,
): Promise<boolean> {
  const rows = await execute(
    orm(client)
      .update(correctionRuns)
      .set({ status: "failed", finishedAt: sql`now()`, durationMs, error })
      .where(and(eq(correctionRuns.runId, runId), eq(correctionRuns.status, "running")))
      .returning({ runId: correctionRuns.runId })
      .prepare("mark_run_failed"),
  );
  return rows.length === 1;
}
