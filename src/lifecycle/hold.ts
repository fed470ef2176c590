/**
 * Holds (README "Incidents: hold"): while a pipeline is held,
 * `straggler.window_results` (and `GET /pipelines/{p}/windows`) serve exactly
 * the rows served when the hold began, each with `held = true`; landing, the
 * stream and corrections go on underneath. A release publishes everything at
 * once: the hold ends and its copy goes in one transaction.
 *
 * A hold is opened by hand (`straggler hold`, `POST /pipelines/{p}/hold`) or
 * by a rule of the pipeline's `hold` block, judged in each micro-batch's
 * transaction before its MERGE — so what stays published is the state before
 * the batch that tripped it:
 *
 *   - `onFutureTs: true`: any FUTURE_TS row in the batch;
 *   - `quarantineShare: { above, batches }`: quarantined rows over the rows
 *     read by the batch and the `batches - 1` before it (only batches since
 *     the last release count) above the share.
 *
 * The hold names the rule and the rows that tripped it (the first 100, and
 * their number). Holds, opens and releases take the pipeline's results lock.
 * Each writes its marker in the change feed (src/db/sql/feed/holdMarkers.ts).
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { withTransaction, type Pool, type PoolClient } from "../db/pool.js";
import type { Hold } from "../core/model.js";
import { closeHold, openHold, readOpenHold, readQuarantinedInRange, readRecentBatchShares } from "../db/sql/lifecycle/holds.js";
import { lockResults } from "../db/sql/stream/lockResults.js";
import { markHold } from "../db/sql/feed/holdMarkers.js";
import { notifyChanges } from "../db/sql/feed/notifyChanges.js";
import type { BatchInput, BatchRange } from "../db/sql/stream/readBatch.js";

export type { Hold };

/** A hold asked of a pipeline already held, or a release of one that is not (409 over REST, exit 1 in the CLI). */
export class HoldStateError extends Error {
  override name = "HoldStateError";
}

const percent = (share: number) => `${Math.round(share * 10_000) / 100}%`;

/**
 * Holds `pipeline`'s published results by hand.
 * @param reason why, as the operator writes it (shown with the hold)
 * @returns the hold and how many windows stay published
 * @throws HoldStateError when it is held already (naming since when and why)
 */
export async function holdPipeline(pool: Pool, pipeline: string, reason: string): Promise<{ hold: Hold; windows: number }> {
  return withTransaction(pool, async (client) => {
    await lockResults(client, pipeline);
    const open = await readOpenHold(client, pipeline);
    if (open) throw new HoldStateError(`pipeline ${pipeline} is already held, since ${open.heldAt} (hold ${open.holdId}: ${open.reason})`);
    const opened = await openHold(client, pipeline, { reason, rule: null, trippedBy: null, batchId: null });
    await markHeld(client, pipeline, opened.hold.holdId);
    return opened;
  });
}

/**
 * Releases `pipeline`'s hold: `straggler.window_results` serves the live results again, all at once.
 * @returns the released hold
 * @throws HoldStateError when it is not held
 */
export async function releasePipeline(pool: Pool, pipeline: string): Promise<Hold> {
  return withTransaction(pool, async (client) => {
    await lockResults(client, pipeline);
    const released = await closeHold(client, pipeline);
    if (!released) throw new HoldStateError(`pipeline ${pipeline} is not held`);
    await markHold(client, pipeline, "released", released.holdId); // the changes written underneath are served from now on
    await notifyChanges(client, pipeline);
    return released;
  });
}

/**
 * Judges the pipeline's hold rules on a micro-batch, inside its transaction
 * (under the results lock), before its MERGE; opens a hold when one trips.
 * @returns the hold opened, or undefined (no rule tripped, no rule configured, or held already)
 */
export async function applyHoldRules(client: PoolClient, pipeline: PipelineConfig, batch: { batchId: number; range: BatchRange; input: BatchInput }): Promise<Hold | undefined> {
  const rules = pipeline.hold;
  // Both rules need a quarantined row in this batch: a share that was above before it has held already.
  if ((!rules.onFutureTs && rules.quarantineShare === null) || batch.input.numQuarantinedRows === 0) return undefined;
  const name = pipeline.name, { batchId, range } = batch;
  if (await readOpenHold(client, name)) return undefined;
  if (rules.onFutureTs) {
    const tripping = await readQuarantinedInRange(client, name, range.afterSeq, range.lastSeq, "FUTURE_TS");
    if (tripping.rowCount > 0) {
      const seqs = tripping.rows.slice(0, 5).map((r) => r.seq).join(", ") + (tripping.rowCount > 5 ? ", …" : "");
      const reason = `rule hold.onFutureTs: ${tripping.rowCount} FUTURE_TS row${tripping.rowCount === 1 ? "" : "s"} in micro-batch ${batchId} (bronze seq ${seqs})`;
      const { hold } = await openHold(client, name, { reason, rule: "onFutureTs", trippedBy: tripping, batchId });
      await markHeld(client, name, hold.holdId);
      return hold;
    }
  }
  const share = rules.quarantineShare;
  if (share !== null) {
    const before = await readRecentBatchShares(client, name, share.batches - 1);
    const read = before.rows + batch.input.numInputRows + batch.input.numQuarantinedRows;
    const quarantined = before.quarantined + batch.input.numQuarantinedRows;
    if (read > 0 && quarantined / read > share.above) {
      const tripping = await readQuarantinedInRange(client, name, before.afterSeq ?? range.afterSeq, range.lastSeq, null);
      const n = before.batches + 1;
      const over = n === 1 ? `micro-batch ${batchId}` : `${n} micro-batches up to ${batchId}`;
      const reason = `rule hold.quarantineShare: ${quarantined} of ${read} rows quarantined (${percent(quarantined / read)}) over ${over}, above ${percent(share.above)}`;
      const { hold } = await openHold(client, name, { reason, rule: "quarantineShare", trippedBy: { ...tripping, rowsRead: read, share: quarantined / read, above: share.above }, batchId });
      await markHeld(client, name, hold.holdId);
      return hold;
    }
  }
  return undefined;
}

/** The hold's `held` marker in the change feed: the feed serves nothing after it until the release (docs/change-feed.md "Holds"). */
async function markHeld(client: PoolClient, pipeline: string, holdId: number): Promise<void> {
  await markHold(client, pipeline, "held", holdId);
  await notifyChanges(client, pipeline);
}
