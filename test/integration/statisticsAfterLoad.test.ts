/**
 * The statistics check at the end of a bulk load (src/db/statistics.ts `analyzeAfterLoad`, a replay's last step):
 * a session reports its tables' change counts at most once a second (PostgreSQL 15+), so a load's last writes are
 * not yet in pg_stat_user_tables when it ends. Counted before the check, they are analysed with the rest, and the
 * next command (a correction) finds nothing stale to ANALYZE again.
 */
import { describe, expect, it } from "vitest";
import { createPool } from "../../src/db/pool.js";
import { readStaleTables } from "../../src/db/sql/observe/plannerStatistics.js";
import { analyzeAfterLoad, STATISTICS_TABLES } from "../../src/db/statistics.js";
import { useTestDatabase } from "../helpers/db.js";
import { backendGone } from "../helpers/locks.js";

const getDb = useTestDatabase();

describe("the statistics check after a load", () => {
  it("counts the load's writes its sessions have not reported yet: after it, nothing is stale", async () => {
    const { url, pool: other } = await getDb();
    const load = createPool(url, 1);
    let pid: number;
    try {
      // The session's first statement: it reports as it goes idle; what it writes within the next second waits.
      pid = (await load.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
      await load.query(
        `INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, last_batch_id)
         SELECT 'after-load', 0, 'k', timestamptz '2024-01-01' + i * interval '1 minute', timestamptz '2024-01-01' + (i + 1) * interval '1 minute', 1, 1, 1, 1, 0
           FROM generate_series(0, 4999) i`,
      );
      expect(await analyzeAfterLoad(load, "after-load")).toEqual(["straggler.window_results_table"]);
    } finally {
      await load.end();
    }
    // The session has ended (and reported whatever it still held): no table is stale for the next command.
    await backendGone(other, pid);
    expect(await readStaleTables(other, STATISTICS_TABLES)).toEqual([]);
  });
});
