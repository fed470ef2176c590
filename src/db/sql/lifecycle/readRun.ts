/** Reads where a correction run stands (src/correction/runLease.ts). */
import { eq } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { correctionRuns } from "../../schemaRecords.js";
import type { RunOutcome } from "./markRunSucceeded.js";

/** A run's status and error, with the counts a finished run recorded (null where it recorded none). */
export type RunState = { status: string; error: string | null } & { [K in keyof RunOutcome]: RunOutcome[K] | null };

/** @returns the run, or undefined when no run has that id */
export async function readRun(client: Queryable, runId: number): Promise<RunState | undefined> {
  const rows = await execute(
    orm(client)
      .select({
        status: correctionRuns.status,
        error: correctionRuns.error,
        bronzeSnapshot: correctionRuns.bronzeSnapshot,
        windowsExamined: correctionRuns.windowsExamined,
        windowsChanged: correctionRuns.windowsChanged,
        eventsRecovered: correctionRuns.eventsRecovered,
        durationMs: correctionRuns.durationMs,
      })
      .from(correctionRuns)
      .where(eq(correctionRuns.runId, runId))
      .prepare("read_run"),
  );
  return rows[0];
}
