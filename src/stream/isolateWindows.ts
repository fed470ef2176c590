/**
 * The micro-batch's failure path for windows whose MERGE fails with a data
 * exception (see `src/db/windowFailures.ts`): the batch's MERGE runs under a
 * savepoint; when it fails with SQLSTATE class 22, the failing (key, window)s
 * are found by bisection, the batch is rolled back, their rows in this batch
 * are quarantined (`INVALID_VALUE`) and the windows recorded as failed in a
 * transaction of their own, and the batch runs again without them — so the
 * watermark, late pairs and counts never include a quarantined row. Under a
 * replica's lease that transaction ends with the lease's fence, as the
 * batch's does (src/cluster/fencing.ts): a deposed owner quarantines nothing.
 */
import type { PipelineLease } from "../cluster/fencing.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import { trySavepoint } from "../db/savepoint.js";
import { keepOnTimeWindows } from "../db/sql/lifecycle/keepOnTimeWindows.js";
import { listOnTimeWindows } from "../db/sql/lifecycle/listOnTimeWindows.js";
import { lockResults } from "../db/sql/stream/lockResults.js";
import { readCheckpoint } from "../db/sql/stream/readCheckpoint.js";
import { readOnTimeWindowRows } from "../db/sql/lifecycle/readOnTimeWindowRows.js";
import { recordWindowFailure, type WindowFailure } from "../db/sql/stream/recordWindowFailure.js";
import { isolateFailing } from "../db/windowFailures.js";

/** Thrown out of a batch's transaction (rolling it back) when some of its windows cannot be MERGEd. */
export class FailingWindowsError extends Error {
  override name = "FailingWindowsError";
  constructor(
    readonly failures: WindowFailure[],
    /** The checkpoint's last `seq` the batch started from: the quarantine applies only if it has not moved. */
    readonly lastSeq: number,
    readonly batchId: number,
  ) {
    super(`${failures.length} window(s) of batch ${batchId} cannot be aggregated: ${failures[0]?.error ?? ""}`);
  }
}

/**
 * Runs the batch's `merge` under a savepoint. On a data exception, finds the
 * on-time (key, window)s of the session's pairs table that fail on their own
 * and throws `FailingWindowsError` naming them and their rows.
 * @throws FailingWindowsError; the original error when no single window fails alone; any other error unchanged
 */
export async function mergeGuarded<R>(
  client: PoolClient,
  batch: { lastSeq: number; batchId: number },
  merge: () => Promise<R>,
): Promise<R> {
  const tried = await trySavepoint(client, "straggler_merge", merge);
  if (tried.error === undefined) return tried.value;
  const e = tried.error;
  const failing = await isolateFailing(client, await listOnTimeWindows(client), e, async (subset) => {
    await keepOnTimeWindows(client, subset);
    await merge();
  });
  if (failing.length === 0) throw e;
  const failures: WindowFailure[] = [];
  for (const f of failing) {
    const rows = await readOnTimeWindowRows(client, f.item);
    failures.push({ groupKey: f.item.k, ...rows, sqlstate: f.sqlstate, error: f.error });
  }
  throw new FailingWindowsError(failures, batch.lastSeq, batch.batchId);
}

/**
 * Quarantines the rows of the failing windows and records the windows, in one
 * transaction under the pipeline's results lock — unless the checkpoint moved
 * meanwhile (another runner took the batch: it found the same windows).
 * `lease`: the pipeline's lease a replica runs the batch under; its fence is the transaction's last statement.
 * @returns rows quarantined, or -1 when the checkpoint had moved (nothing done)
 * @throws LeaseLostError when `lease` is no longer held (nothing is written)
 */
export async function quarantineFailingWindows(
  pool: Pool,
  pipeline: PipelineConfig,
  e: FailingWindowsError,
  lease?: Pick<PipelineLease, "assertHeld">,
): Promise<number> {
  return withTransaction(pool, async (client) => {
    await lockResults(client, pipeline.name);
    const checkpoint = await readCheckpoint(client, pipeline.name);
    if ((checkpoint?.lastSeq ?? 0) !== e.lastSeq) return -1; // no checkpoint row yet: the batch started from 0
    let n = 0;
    for (const f of e.failures)
      n += await recordWindowFailure(client, pipeline.name, f, { phase: "stream", batchId: e.batchId });
    await lease?.assertHeld(client); // fencing: a replica that lost the lease quarantines nothing (LeaseLostError rolls it back)
    return n;
  });
}
