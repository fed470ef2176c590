/** Sources of one pipeline, the most recently seen first (view `straggler.sources`; `GET /pipelines/{pipeline}/sources`). */
import { and, desc, eq } from "drizzle-orm";
import { execute, orm } from "../../orm.js";
import type { Queryable } from "../../pool.js";
import { columnsBesidesPipeline, sources } from "../../views.js";

/**
 * Not prepared: its text depends on the filters given.
 * @param filter.state only sources in this state (`landed`, `refused`, …)
 * @param filter.kind only sources of this kind (`file`, `http`, `stdin`, `replay`, `nats`)
 * @param filter.limit rows at most
 * @returns rows keyed by the view's column names (`pipeline` left out)
 * @throws the database's error when it cannot be reached
 */
export async function readSources(
  client: Queryable,
  pipeline: string,
  filter: { state?: string; kind?: string; limit: number },
) {
  return execute(
    orm(client)
      .select(columnsBesidesPipeline(sources))
      .from(sources)
      .where(
        and(
          eq(sources.pipeline, pipeline),
          filter.state === undefined ? undefined : eq(sources.state, filter.state),
          filter.kind === undefined ? undefined : eq(sources.kind, filter.kind),
        ),
      )
      .orderBy(desc(sources.last_seen), sources.source)
      .limit(filter.limit),
  );
}
