/** Records a correction run's success inside its own transaction (src/correction/runLease.ts). */
import { and, eq, sql } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { correctionRuns } from "../../schemaRecords.js";

/** What a finished run counted. */
export interface RunOutcome {
  /** The bronze `seq` the run read up to (the stream's checkpoint); null before the stream's first batch. */
  bronzeSnapshot: number | null;
  windowsExamined: number;
  windowsChanged: number;
  eventsRecovered: number;
  durationMs: number;
}

/**
 * Marks the run `succeeded` with its outcome, `finished_at` = the database's clock, only while it is `running`.
 * @returns false when the run is no longer `running` (nothing written)
 */
export async function markRunSucceeded(client: Queryable, runId: number, outcome: RunOutcome): Promise<boolean> {
  const rows = await execute(
    orm(client)
      .update(correctionRuns)
      .set({
        status: "succeeded",
        bronzeSnapshot: outcome.bronzeSnapshot,
        windowsExamined: outcome.windowsExamined,
        windowsChanged: outcome.windowsChanged,
        eventsRecovered: outcome.eventsRecovered,
        finishedAt: sql`clock_timestamp()`,
        durationMs: outcome.durationMs,
        error: null,
      })
      .where(and(eq(correctionRuns.runId, runId), eq(correctionRuns.status, "running")))
      .returning({ runId: correctionRuns.runId })
      .prepare("mark_run_succeeded"),
  );
  return rows.length === 1;
}
