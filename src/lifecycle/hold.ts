/**
 * Holds (README "Incidents: hold"): while a pipeline is held,
 * `straggler.window_results` (and `GET /pipelines/{p}/windows`) serve exactly
 * the rows served when the hold began, each with `held = true`; landing, the
 * stream and corrections go on underneath. A release publishes everything at
 * once: the hold ends and its copy goes in one transaction.
 *
 * A hold is opened by hand (`straggler hold`, `POST /pipelines/{p}/hold`) or
 * by a rule of the pipeline's `hold` block, judged in each micro-batch's
 * transaction before its MERGE (src/guards/holdRules.ts). Holds, opens and
 * releases take the pipeline's results lock.
 * Each writes its marker in the change feed (src/db/sql/feed/holdMarkers.ts).
 */
import { withTransaction, type Pool } from "../db/pool.js";
import type { Hold } from "../core/model.js";
import { closeHold, openHold, readOpenHold } from "../db/sql/lifecycle/holds.js";
import { lockResults } from "../db/sql/stream/lockResults.js";
import { markHeld, markHold } from "../db/sql/feed/holdMarkers.js";
import { notifyChanges } from "../db/sql/feed/notifyChanges.js";

export type { Hold };

/** A hold asked of a pipeline already held, or a release of one that is not (409 over REST, exit 1 in the CLI). */
export class HoldStateError extends Error {
  override name = "HoldStateError";
}

/**
 * Holds `pipeline`'s published results by hand.
 * @param reason why, as the operator writes it (shown with the hold)
 * @returns the hold and how many windows stay published
 * @throws HoldStateError when it is held already (naming since when and why)
 */
export async function holdPipeline(
  pool: Pool,
  pipeline: string,
  reason: string,
): Promise<{ hold: Hold; windows: number }> {
  return withTransaction(pool, async (client) => {
    await lockResults(client, pipeline);
    const open = await readOpenHold(client, pipeline);
    if (open)
      throw new HoldStateError(
        `pipeline ${pipeline} is already held, since ${open.heldAt} (hold ${open.holdId}: ${open.reason})`,
      );
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
