/** Lists a correction run's target windows (`corr_targets`, createRunTables.ts). */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { KeyedWindow } from "../readmodel/windows.js";

const LIST_TARGETS_SQL = "SELECT group_key, window_start, window_end FROM corr_targets ORDER BY 1, 2, 3";

/** @returns the targets (stored keys, ISO bounds), ordered by key, start, end */
export async function listTargets(client: PoolClient): Promise<KeyedWindow[]> {
  const { rows } = await client.query(prepared("list_targets", LIST_TARGETS_SQL));
  return rows.map((r) => ({ groupKey: r.group_key, windowStart: r.window_start, windowEnd: r.window_end }));
}
