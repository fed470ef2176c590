/** Narrows the session's pairs table to some on-time windows, for a trial MERGE (src/stream/isolateWindows.ts). */
import type { PoolClient } from "../../pool.js";
import { BATCH_PAIRS } from "../fragments/batchPairs.js";
import type { PairWindow } from "./listOnTimeWindows.js";

const KEEP_SQL = `DELETE FROM ${BATCH_PAIRS} p WHERE NOT late
            AND NOT EXISTS (SELECT 1 FROM unnest($1::text[], $2::bigint[]) u(k, w) WHERE u.k = p.group_key AND u.w = p.ws_us)`;

/** Deletes every on-time pair whose (key, window) is not in `windows` (late pairs stay). */
export async function keepOnTimeWindows(client: PoolClient, windows: PairWindow[]): Promise<void> {
  await client.query(KEEP_SQL, [windows.map((g) => g.k), windows.map((g) => g.w)]);
}
