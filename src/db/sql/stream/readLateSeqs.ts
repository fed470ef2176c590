/** The late rows of one window that the stream never applied and a correction would: still accepted, not superseded, up to a snapshot. */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { KeyedWindow } from "../readmodel/windows.js";
import { notSuperseded } from "../fragments/superseded.js";

const READ_LATE_SEQS_SQL = `SELECT coalesce(array_agg(l.seq ORDER BY l.seq), '{}')::text[] AS seqs
  FROM straggler.late_events l JOIN straggler.bronze_events b ON b.pipeline = l.pipeline AND b.seq = l.seq
 WHERE l.pipeline = $1 AND l.group_key = $2 AND l.window_start = $3 AND l.window_end = $4 AND l.seq <= $5 AND b.status = 'accepted' AND ${notSuperseded("b", "$5")}`;

/** @returns the bronze `seq`s of `window`'s accepted late rows in `pipeline` up to `seq` `snapshot`, ascending */
export async function readLateSeqs(
  client: PoolClient,
  pipeline: string,
  window: KeyedWindow,
  snapshot: number,
): Promise<number[]> {
  const { rows } = await client.query(
    prepared("read_late_seqs", READ_LATE_SEQS_SQL, [
      pipeline,
      window.groupKey,
      window.windowStart,
      window.windowEnd,
      snapshot,
    ]),
  );
  return (rows[0].seqs as string[]).map(Number);
}
