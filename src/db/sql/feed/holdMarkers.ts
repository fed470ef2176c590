/**
 * A hold and its release in the change feed (docs/change-feed.md "Holds"):
 * while a pipeline is held, `straggler.window_results` serves the rows it
 * served when the hold began, so the feed serves the changes up to the hold's
 * `held` marker and no further; the changes written underneath (stream,
 * corrections) keep their ids and are served once the `released` marker is
 * written, in the release's transaction. Both are written under the
 * pipeline's results lock, as every change is.
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { notifyChanges } from "./notifyChanges.js";

const MARK_SQL = `INSERT INTO straggler.window_changes (pipeline, change, hold_id) VALUES ($1, $2, $3) RETURNING id`;

/**
 * Writes `pipeline`'s marker `held` (hold `holdId` began) or `released` (it ended) in `client`'s transaction.
 * @returns the marker's id
 * @throws the database's error
 */
export async function markHold(
  client: Queryable,
  pipeline: string,
  change: "held" | "released",
  holdId: number,
): Promise<number> {
  return (await client.query<{ id: number }>(prepared("feed_mark_hold", MARK_SQL, [pipeline, change, holdId]))).rows[0]!
    .id;
}

/**
 * Writes the hold's `held` marker in `client`'s transaction and wakes the feed's open streams: the feed serves
 * nothing after it until the release (docs/change-feed.md "Holds"). A hold opened by hand
 * (src/lifecycle/hold.ts) and one opened by a hold rule (src/guards/holdRules.ts) both end so.
 * @throws the database's error
 */
export async function markHeld(client: Queryable, pipeline: string, holdId: number): Promise<void> {
  await markHold(client, pipeline, "held", holdId);
  await notifyChanges(client, pipeline);
}
