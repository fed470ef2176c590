/** Renews a running correction run's lease (src/correction/runLease.ts). */
import { and, eq, sql } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { correctionRuns } from "../../schemaRecords.js";

/**
 * Sets the run's `lease_until` to the database's clock + `leaseMs`, only while it is `running`.
 * @throws the database's error when it cannot be reached
 */
export async function renewLease(client: Queryable, runId: number, leaseMs: number): Promise<void> {
  await execute(
    orm(client)
      .update(correctionRuns)
      .set({ leaseUntil: sql`clock_timestamp() + ${leaseMs} * interval '1 millisecond'` })
      .where(and(eq(correctionRuns.runId, runId), eq(correctionRuns.status, "running")))
      .prepare("renew_lease"),
  );
}
