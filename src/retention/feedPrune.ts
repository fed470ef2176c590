/**
 * The change feed's retention (docs/change-feed.md "Retention"): for each
 * pipeline that keeps a feed (`feed.enabled`) and has a `retention` setting,
 * the changes of windows past the correction horizon (ending at or before the
 * watermark minus the horizon, the bound bronze is archived by) are pruned as
 * a prefix of the feed (src/db/sql/feed/pruneChanges.ts). Run on the retention
 * tick (src/retention/schedule.ts).
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import { pruneChanges } from "../db/sql/feed/pruneChanges.js";
import { readCheckpoint } from "../db/sql/stream/readCheckpoint.js";

/**
 * Prunes the feeds of `pipelines` past their correction horizons.
 * @returns changes pruned per pipeline (pipelines without a feed, a retention setting or a watermark are left out)
 * @throws the database's error
 */
export async function pruneFeeds(pool: Pool, pipelines: PipelineConfig[]): Promise<Record<string, number>> {
  const pruned: Record<string, number> = {};
  for (const p of pipelines) {
    if (!p.feed.enabled || !p.retention) continue;
    const watermark = (await readCheckpoint(pool, p.name))?.watermark ?? null;
    if (watermark === null) continue;
    const cutoff = new Date(Date.parse(watermark) - p.retention.correctionHorizon).toISOString();
    pruned[p.name] = await pruneChanges(pool, p.name, cutoff);
  }
  return pruned;
}
