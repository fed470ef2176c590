/** Reads a failing on-time window of the session's pairs table: its bounds and rows (src/stream/isolateWindows.ts). */
import type { PoolClient } from "../../pool.js";
import { BATCH_PAIRS, pairWindowBounds } from "../fragments/batchPairs.js";
import type { PairWindow } from "./listOnTimeWindows.js";

/** @returns the bounds (ISO 8601) of the on-time window `window` and the `seq`s of its rows, ascending */
export async function readOnTimeWindowRows(
  client: PoolClient,
  window: PairWindow,
): Promise<{ windowStart: string; windowEnd: string; seqs: number[] }> {
  const { windowStart, windowEnd } = pairWindowBounds();
  const r = (
    await client.query(
      `SELECT ${windowStart} AS window_start, ${windowEnd} AS window_end, array_agg(seq ORDER BY seq)::text[] AS seqs
         FROM ${BATCH_PAIRS} WHERE NOT late AND group_key = $1 AND ws_us = $2::bigint GROUP BY ws_us, we_us`,
      [window.k, window.w],
    )
  ).rows[0];
  return { windowStart: r.window_start, windowEnd: r.window_end, seqs: (r.seqs as string[]).map(Number) };
}
