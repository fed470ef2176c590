/** Counts a pipeline's sources (files, requests, replay micro-batches) by state, from the view `straggler.sources`. */
import type { Queryable } from "../../pool.js";

/** Sources of one pipeline per state. */
export interface SourceCounts {
  landed: number;
  refused: number;
  changed_after_landing: number;
  waiting_to_settle: number;
}

const COUNT_SOURCES_SQL = "SELECT state, count(*)::int AS n FROM straggler.sources WHERE pipeline = $1 GROUP BY state";

/** Every state present (0 when none). */
export async function countSourcesByState(client: Queryable, pipeline: string): Promise<SourceCounts> {
  const { rows } = await client.query(COUNT_SOURCES_SQL, [pipeline]);
  const by = Object.fromEntries(rows.map((r) => [r.state, r.n]));
  return {
    landed: by.landed ?? 0,
    refused: by.refused ?? 0,
    changed_after_landing: by.changed_after_landing ?? 0,
    waiting_to_settle: by.waiting_to_settle ?? 0,
  };
}
