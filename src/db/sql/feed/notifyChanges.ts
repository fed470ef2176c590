/**
 * The change feed's notification channel (docs/change-feed.md "NOTIFY"):
 * `straggler_window_changes`, payload the pipeline's name, queued in the
 * transaction that wrote changes and so delivered only when it commits (and
 * never for one rolled back). A listener then reads the feed after the last id
 * it applied; a notification says "there is more", not what.
 */
import type { Queryable } from "../../pool.js";

/** Channel notified (payload: pipeline name) when a transaction that wrote changes of the pipeline commits. */
export const CHANGES_CHANNEL = "straggler_window_changes";

/**
 * Queues the notification for `pipeline` in `client`'s transaction (one per transaction and pipeline: PostgreSQL folds duplicates).
 * @throws the database's error
 */
export async function notifyChanges(client: Queryable, pipeline: string): Promise<void> {
  await client.query("SELECT pg_notify($1, $2)", [CHANGES_CHANNEL, pipeline]);
}

/**
 * Subscribes `client`'s session to the channel; notifications then arrive as its `notification` events.
 * @throws the database's error
 */
export async function listenForChanges(client: Queryable): Promise<void> {
  await client.query(`LISTEN ${CHANGES_CHANNEL}`);
}
