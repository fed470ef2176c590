/**
 * The notification channel that wakes the stream when rows land in bronze
 * (LISTEN/NOTIFY, payload: the pipeline's name), and the landing's last
 * statement before COMMIT, which also reads the transaction's id.
 */
import type { Queryable } from "../../pool.js";

/** Channel notified (payload: pipeline name) when rows land, to wake the stream. */
export const BRONZE_CHANNEL = "straggler_bronze";

const NOTIFY_LANDED_SQL = "SELECT pg_notify($1, $2), txid_current()::text AS txid";
const LISTEN_LANDED_SQL = `LISTEN ${BRONZE_CHANNEL}`;

/**
 * Queues a notification for `pipeline` (sent when the transaction commits) and reads the transaction's id.
 * @returns `txid_current()` as text: what `readTxidStatus` asks about when the answer to COMMIT is lost
 * @throws the database's error
 */
export async function notifyLanded(client: Queryable, pipeline: string): Promise<string> {
  return (await client.query(NOTIFY_LANDED_SQL, [BRONZE_CHANNEL, pipeline])).rows[0].txid as string;
}

/**
 * Subscribes `client`'s session to the channel; notifications then arrive as its `notification` events.
 * @throws the database's error
 */
export async function listenForLanded(client: Queryable): Promise<void> {
  await client.query(LISTEN_LANDED_SQL);
}
