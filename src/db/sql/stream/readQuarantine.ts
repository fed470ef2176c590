/** Quarantined rows of one pipeline, the latest first (view `straggler.quarantine`; `GET /pipelines/{pipeline}/quarantine`). */
import { and, desc, eq } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { columnsBesidesPipeline, quarantine } from "../../views.js";

/**
 * Not prepared: its text depends on the filters given.
 * @param filter.reason only rows quarantined for this reason code
 * @param filter.limit rows at most, highest `seq` first
 * @returns rows keyed by the view's column names (`pipeline` left out)
 * @throws the database's error when it cannot be reached
 */
export async function readQuarantine(client: Queryable, pipeline: string, filter: { reason?: string; limit: number }) {
  return execute(
    orm(client)
      .select(columnsBesidesPipeline(quarantine))
      .from(quarantine)
      .where(
        and(
          eq(quarantine.pipeline, pipeline),
          filter.reason === undefined ? undefined : eq(quarantine.reason, filter.reason),
        ),
      )
      .orderBy(desc(quarantine.seq))
      .limit(filter.limit),
  );
}
