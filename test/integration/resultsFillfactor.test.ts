/**
 * Migration 0030: window results keep room on each page (fillfactor 85), so an update that
 * changes no indexed column — a correction's upsert of a final window — is a HOT update (no new
 * index entries).
 */
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();

describe("window results' fillfactor (migration 0030)", () => {
  it("the results table (every version's windows, drizzle/0051) is made with fillfactor 85, and a final window's new value is a HOT update", async () => {
    const { pool } = await getDb();
    const { rows } = await pool.query(
      "SELECT relname, reloptions FROM pg_class WHERE relnamespace = 'straggler'::regnamespace AND relname IN ('window_results_table', 'version_window_results') ORDER BY relname",
    );
    expect(rows).toEqual([{ relname: "window_results_table", reloptions: ["fillfactor=85"] }]);
    const client = await pool.connect();
    try {
      // 500 final windows (a few pages), then a correction-like upsert of one in ten, as a correction touches a share of them.
      await client.query(`INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final)
        SELECT 'ff', 0, 'k', timestamptz '2024-01-15 00:00Z' + i * interval '10 minutes', timestamptz '2024-01-15 00:10Z' + i * interval '10 minutes', 1, 1, 1, 1, true FROM generate_series(0, 499) i`);
      await client.query("BEGIN");
      await client.query(`INSERT INTO straggler.window_results_table AS r (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final, corrected, revision)
        SELECT pipeline, version, group_key, window_start, window_end, 2, 3, 1, 2, true, true, 2 FROM straggler.window_results_table WHERE pipeline = 'ff' AND extract(epoch FROM window_start)::bigint % 6000 = 0
        ON CONFLICT (pipeline, version, group_key, window_start, window_end) DO UPDATE SET event_count = excluded.event_count, value_sum = excluded.value_sum,
          value_min = excluded.value_min, value_max = excluded.value_max, corrected = true, revision = r.revision + 1, updated_at = now()`);
      const stats = await client.query(
        "SELECT n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot FROM pg_stat_xact_user_tables WHERE relid = 'straggler.window_results_table'::regclass",
      );
      await client.query("COMMIT");
      expect(stats.rows[0]).toEqual({ upd: 50, hot: 50 });
    } finally {
      client.release();
    }
  });
});
