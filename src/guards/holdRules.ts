/**
 * The hold rules (README "Incidents: hold"): a rule of the pipeline's `hold` block, judged in each
 * micro-batch's transaction before its MERGE, opens a hold (src/lifecycle/hold.ts) — so what stays
 * published is the state before the batch that tripped it:
 *
 *   - `onFutureTs: true`: any FUTURE_TS row in the batch;
 *   - `quarantineShare: { above, batches }`: quarantined rows over the rows
 *     read by the batch and the `batches - 1` before it (only batches since
 *     the last release count) above the share.
 *
 * The hold names the rule and the rows that tripped it (the first 100, and
 * their number).
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { PoolClient } from "../db/pool.js";
import {
  openHold,
  readOpenHold,
  readQuarantinedInRange,
  readRecentBatchShares,
  type Hold,
} from "../db/sql/lifecycle/holds.js";
import type { BatchInput, BatchRange } from "../db/sql/stream/readBatch.js";
import { markHeld } from "../db/sql/feed/holdMarkers.js";

const percent = (share: number) => `${Math.round(share * 10_000) / 100}%`;

/**
 * Judges the pipeline's hold rules on a micro-batch, inside its transaction
 * (under the results lock), before its MERGE; opens a hold when one trips.
 * @returns the hold opened, or undefined (no rule tripped, no rule configured, or held already)
 */
export async function applyHoldRules(
  client: PoolClient,
  pipeline: PipelineConfig,
  batch: { batchId: number; range: BatchRange; input: BatchInput },
): Promise<Hold | undefined> {
  const rules = pipeline.hold;
  // Both rules need a quarantined row in this batch: a share that was above before it has held already.
  if ((!rules.onFutureTs && rules.quarantineShare === null) || batch.input.numQuarantinedRows === 0) return undefined;
  const name = pipeline.name,
    { batchId, range } = batch;
  if (await readOpenHold(client, name)) return undefined;
  if (rules.onFutureTs) {
    const tripping = await readQuarantinedInRange(client, name, range.afterSeq, range.lastSeq, "FUTURE_TS");
    if (tripping.rowCount > 0) {
      const seqs =
        tripping.rows
          .slice(0, 5)
          .map((r) => r.seq)
          .join(", ") + (tripping.rowCount > 5 ? ", …" : "");
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
      const tripping = await readQuarantinedInRange(
        client,
        name,
        before.afterSeq ?? range.afterSeq,
        range.lastSeq,
        null,
      );
      const n = before.batches + 1;
      const over = n === 1 ? `micro-batch ${batchId}` : `${n} micro-batches up to ${batchId}`;
      const reason = `rule hold.quarantineShare: ${quarantined} of ${read} rows quarantined (${percent(quarantined / read)}) over ${over}, above ${percent(share.above)}`;
      const { hold } = await openHold(client, name, {
        reason,
        rule: "quarantineShare",
        trippedBy: { ...tripping, rowsRead: read, share: quarantined / read, above: share.above },
        batchId,
      });
      await markHeld(client, name, hold.holdId);
      return hold;
    }
  }
  return undefined;
}
