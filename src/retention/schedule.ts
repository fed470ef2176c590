/**
 * The service's retention work: bronze's monthly partitions (this month's and the next) made at start
 * and every hour (src/db/sql/retention/partitions.ts), and, for pipelines with a
 * `retention` setting, the archive step on the same hourly tick
 * (src/retention/archive.ts) and the change feeds' prune (src/retention/feedPrune.ts). Failures are logged and retried on the next tick.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import { startLoop } from "../loop.js";
import { runArchive } from "./archive.js";
import { pruneFeeds } from "./feedPrune.js";
import { ensurePartitions } from "../db/sql/retention/partitions.js";

/** The tick of the retention work, ms (one hour). */
const RETENTION_TICK_MS = 3_600_000;

/**
 * Starts the retention work (on the service's one loop, src/loop.ts): a first tick now, then one
 * `tickMs` after each ended; the wait does not keep the process alive.
 * @returns `stop()`, which ends the wait and awaits a tick in flight
 */
export function startRetention(
  pool: Pool,
  pipelines: PipelineConfig[],
  log: Logger,
  tickMs = RETENTION_TICK_MS,
): { stop(): Promise<void> } {
  const tick = async () => {
    try {
      const made = await ensurePartitions(pool);
      if (made > 0) log.info({ made }, "bronze partitions made ahead");
    } catch (e) {
      log.warn(
        { err: (e as Error).message },
        "bronze partitions could not be made ahead; retried at the next tick (landings go to the DEFAULT partition meanwhile)",
      );
    }
    if (!pipelines.some((p) => p.retention)) return;
    try {
      const run = await runArchive(pool, pipelines, { includeRestored: false });
      for (const a of run.archived)
        log.info(
          { partition: a.partition, rows: a.rows, files: a.archives.map((w) => w.manifestFile) },
          `bronze partition ${a.partition} archived and dropped`,
        );
    } catch (e) {
      log.warn(
        { err: (e as Error).message },
        "bronze archive run failed; retried at the next tick (nothing was dropped that was not archived)",
      );
    }
    try {
      for (const [pipeline, n] of Object.entries(await pruneFeeds(pool, pipelines)))
        if (n > 0) log.info({ pipeline, changes: n }, "change feed pruned past the correction horizon");
    } catch (e) {
      log.warn({ err: (e as Error).message }, "change feed prune failed; retried at the next tick");
    }
  };
  // Each step logs its own failure: a tick never fails as a whole.
  const loop = startLoop(tick, {
    intervalMs: tickMs,
    unref: true,
    onError: (e) => log.warn({ err: e }, "retention tick failed; retried at the next tick"),
  });
  return { stop: () => loop.stop() };
}
