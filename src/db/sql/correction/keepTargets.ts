/** Narrows a correction run's targets (`corr_targets`) to some windows: a trial of its failure path. */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { KeyedWindow } from "../readmodel/windows.js";

const KEEP_TARGETS_SQL = `DELETE FROM corr_targets t WHERE NOT EXISTS (SELECT 1 FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) u(k, s, e)
  WHERE u.k = t.group_key AND u.s = t.window_start AND u.e = t.window_end)`;

/** Deletes every target but `windows`. */
export async function keepTargets(client: PoolClient, windows: KeyedWindow[]): Promise<void> {
  await client.query(
    prepared("keep_targets", KEEP_TARGETS_SQL, [
      windows.map((w) => w.groupKey),
      windows.map((w) => w.windowStart),
      windows.map((w) => w.windowEnd),
    ]),
  );
}
