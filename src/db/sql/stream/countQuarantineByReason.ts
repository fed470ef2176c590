/** Quarantined rows of one pipeline by reason (view `straggler.quarantine`). */
import { count, eq } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { quarantine } from "../../views.js";

const COUNT_QUARANTINE_BY_REASON = "count_quarantine_by_reason";

/**
 * @returns rows by reason code (`PARSE_FAIL`, …), in reason order; only reasons with rows
 * @throws the database's error when it cannot be reached
 */
export async function countQuarantineByReason(client: Queryable, pipeline: string): Promise<Record<string, number>> {
  const rows = await execute(
    orm(client)
      .select({ reason: quarantine.reason, n: count() })
      .from(quarantine)
      .where(eq(quarantine.pipeline, pipeline))
      .groupBy(quarantine.reason)
      .orderBy(quarantine.reason)
      .prepare(COUNT_QUARANTINE_BY_REASON),
  );
  return Object.fromEntries(rows.map((r) => [r.reason, r.n]));
}
