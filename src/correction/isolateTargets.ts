/**
 * The correction's failure path for windows whose recompute fails with a data
 * exception (see `src/db/windowFailures.ts`), e.g. late rows accepted under an
 * older policy whose sum overflows numeric. The recompute runs under a
 * savepoint; when it fails, the failing target windows are found by
 * bisection, the window's late rows (those the stream never applied, up to
 * the run's snapshot) are quarantined (`INVALID_VALUE`) and the window is
 * recorded as failed; the recompute then runs again, so the run goes on and
 * succeeds for every other window. A window that still fails with no late
 * rows left to blame is dropped from the run's targets (recorded, unchanged).
 * Other final windows holding a quarantined row (sliding windows) join the
 * targets and are recomputed without it.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { windowSpecOf } from "../config/pipelines.js";
import type { PoolClient } from "../db/pool.js";
import { isDataException, isolateFailing, recordWindowFailure } from "../db/windowFailures.js";
import { windowsLateral } from "../db/sql/fragments/windowAssignment.js";

/**
 * Runs `recompute` (which reads `corr_targets`) until it succeeds, isolating failing windows as above.
 * @returns the number of windows recorded as failed
 * @throws the original error when no single window fails alone; any other error unchanged
 */
export async function recomputeGuarded(c: PoolClient, p: PipelineConfig, runId: number, snapshot: number, recompute: () => Promise<unknown>): Promise<number> {
  let failed = 0;
  for (;;) {
    await c.query("SAVEPOINT straggler_recompute");
    try {
      await recompute();
      await c.query("RELEASE SAVEPOINT straggler_recompute");
      return failed;
    } catch (e) {
      if (!isDataException(e)) throw e;
      await c.query("ROLLBACK TO SAVEPOINT straggler_recompute");
      await c.query("RELEASE SAVEPOINT straggler_recompute");
      const targets = (await c.query("SELECT group_key AS k, window_start AS s, window_end AS e FROM corr_targets ORDER BY 1, 2, 3")).rows as Array<{ k: string; s: string; e: string }>;
      const failing = await isolateFailing(c, targets, e, async (subset) => {
        await c.query(
          `DELETE FROM corr_targets t WHERE NOT EXISTS (SELECT 1 FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) u(k, s, e)
             WHERE u.k = t.group_key AND u.s = t.window_start AND u.e = t.window_end)`,
          [subset.map((x) => x.k), subset.map((x) => x.s), subset.map((x) => x.e)],
        );
        await recompute();
      });
      if (failing.length === 0) throw e;
      const watermark = (await c.query("SELECT watermark FROM straggler.checkpoints WHERE pipeline = $1", [p.name])).rows[0]?.watermark as string;
      for (const f of failing) {
        const { k, s, e: end } = f.item;
        const late = await c.query(
          `SELECT coalesce(array_agg(l.seq ORDER BY l.seq), '{}')::text[] AS seqs FROM straggler.late_events l JOIN straggler.bronze_events b ON b.seq = l.seq
            WHERE l.pipeline = $1 AND l.group_key = $2 AND l.window_start = $3 AND l.window_end = $4 AND l.seq <= $5 AND b.status = 'accepted'`,
          [p.name, k, s, end, snapshot],
        );
        const seqs = (late.rows[0].seqs as string[]).map(Number);
        await recordWindowFailure(c, p.name, { groupKey: k, windowStart: s, windowEnd: end, sqlstate: f.sqlstate, error: f.error, seqs }, { phase: "correction", runId });
        failed++;
        if (seqs.length === 0) {
          await c.query("DELETE FROM corr_targets WHERE group_key = $1 AND window_start = $2 AND window_end = $3", [k, s, end]);
          continue;
        }
        await c.query(
          `INSERT INTO corr_targets
           SELECT DISTINCT b.group_key, w.window_start, w.window_end FROM straggler.bronze_events b ${windowsLateral(windowSpecOf(p), "b")}
            WHERE b.seq = ANY($1::bigint[]) AND w.window_end <= $2
           ON CONFLICT DO NOTHING`,
          [seqs, watermark],
        );
      }
    }
  }
}
