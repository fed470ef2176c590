/** The windows one correction run changed, before and after (view `straggler.correction_audit`). */
import { eq } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { correctionAudit } from "../../views.js";

const READ_CORRECTION_AUDIT = "read_correction_audit";

/**
 * @returns rows keyed by the view's column names, by group key then window start
 * @throws the database's error when it cannot be reached
 */
export async function readCorrectionAudit(client: Queryable, runId: number) {
  const a = correctionAudit;
  return execute(
    orm(client)
      .select()
      .from(a)
      .where(eq(a.run_id, runId))
      .orderBy(a.group_key, a.window_start)
      .prepare(READ_CORRECTION_AUDIT),
  );
}
