/**
 * The micro-batch's failure path for windows whose MERGE fails with a data
 * exception (see `src/db/windowFailures.ts`): the batch's MERGE runs under a
 * savepoint; when it fails with SQLSTATE class 22, the failing (key, window)s
 * are found by bisection, the batch is rolled back, their rows in this batch
 * are quarantined (`INVALID_VALUE`) and the windows recorded as failed in a
 * transaction of their own, and the batch runs again without them — so the
 * watermark, late pairs and counts never include a quarantined row.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { LockNamespace, XACT_LOCK_SQL } from "../db/locks.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import { isDataException, isolateFailing, recordWindowFailure, type WindowFailure } from "../db/windowFailures.js";

/** The batch's (event, window) pairs table: its name, window column, and SQL for the window's bounds from that column. */
export interface PairsTable {
  table: string;
  window: string;
  windowStart: string;
  windowEnd: string;
}

/** Thrown out of a batch's transaction (rolling it back) when some of its windows cannot be MERGEd. */
export class FailingWindowsError extends Error {
  override name = "FailingWindowsError";
  constructor(
    readonly failures: WindowFailure[],
    /** The checkpoint offset the batch started from: the quarantine applies only if it has not moved. */
    readonly lastOffset: number,
    readonly batchId: number,
  ) {
    super(`${failures.length} window(s) of batch ${batchId} cannot be aggregated: ${failures[0]?.error ?? ""}`);
  }
}

/**
 * Runs the batch's `merge` under a savepoint. On a data exception, finds the
 * on-time (key, window)s of `t` that fail on their own and throws
 * `FailingWindowsError` naming them and their rows.
 * @throws FailingWindowsError; the original error when no single window fails alone; any other error unchanged
 */
export async function mergeGuarded<R>(c: PoolClient, t: PairsTable, batch: { lastOffset: number; batchId: number }, merge: () => Promise<R>): Promise<R> {
  await c.query("SAVEPOINT straggler_merge");
  try {
    const r = await merge();
    await c.query("RELEASE SAVEPOINT straggler_merge");
    return r;
  } catch (e) {
    if (!isDataException(e)) throw e;
    await c.query("ROLLBACK TO SAVEPOINT straggler_merge");
    const groups = (await c.query(`SELECT DISTINCT group_key AS k, ${t.window}::text AS w FROM ${t.table} WHERE NOT late ORDER BY 1, 2`)).rows as Array<{ k: string; w: string }>;
    const failing = await isolateFailing(c, groups, e, async (subset) => {
      await c.query(
        `DELETE FROM ${t.table} p WHERE NOT late
            AND NOT EXISTS (SELECT 1 FROM unnest($1::text[], $2::bigint[]) u(k, w) WHERE u.k = p.group_key AND u.w = p.${t.window})`,
        [subset.map((g) => g.k), subset.map((g) => g.w)],
      );
      await merge();
    });
    if (failing.length === 0) throw e;
    const failures: WindowFailure[] = [];
    for (const f of failing) {
      const r = (
        await c.query(
          `SELECT ${t.windowStart} AS window_start, ${t.windowEnd} AS window_end, array_agg(seq ORDER BY seq)::text[] AS seqs
             FROM ${t.table} WHERE NOT late AND group_key = $1 AND ${t.window} = $2::bigint GROUP BY ${t.window}`,
          [f.item.k, f.item.w],
        )
      ).rows[0];
      failures.push({ groupKey: f.item.k, windowStart: r.window_start, windowEnd: r.window_end, sqlstate: f.sqlstate, error: f.error, seqs: (r.seqs as string[]).map(Number) });
    }
    throw new FailingWindowsError(failures, batch.lastOffset, batch.batchId);
  }
}

/**
 * Quarantines the rows of the failing windows and records the windows, in one
 * transaction under the pipeline's results lock — unless the checkpoint moved
 * meanwhile (another runner took the batch: it found the same windows).
 * @returns rows quarantined, or -1 when the checkpoint had moved (nothing done)
 */
export async function quarantineFailingWindows(pool: Pool, p: PipelineConfig, e: FailingWindowsError): Promise<number> {
  return withTransaction(pool, async (c) => {
    await c.query(XACT_LOCK_SQL, [LockNamespace.results, p.name]);
    const cp = await c.query("SELECT last_offset FROM straggler.checkpoints WHERE pipeline = $1", [p.name]);
    if ((cp.rows[0]?.last_offset ?? 0) !== e.lastOffset) return -1; // no checkpoint row yet: the batch started from 0
    let n = 0;
    for (const f of e.failures) n += await recordWindowFailure(c, p.name, f, { phase: "stream", batchId: e.batchId });
    return n;
  });
}
