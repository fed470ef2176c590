/** Removes one window from a correction run's targets (`corr_targets`): it fails with no late rows left to blame. */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { KeyedWindow } from "../readmodel/windows.js";

const DROP_TARGET_SQL = "DELETE FROM corr_targets WHERE group_key = $1 AND window_start = $2 AND window_end = $3";

export async function dropTarget(client: PoolClient, window: KeyedWindow): Promise<void> {
  await client.query(prepared("drop_target", DROP_TARGET_SQL, [window.groupKey, window.windowStart, window.windowEnd]));
}
