/** Reads of the read model used by tests. */
import type { Pool } from "../../src/db/pool.js";

export interface WindowRow {
  group_key: string;
  window_start: string;
  window_end: string;
  event_count: number;
  value_sum: string | null;
  status: string;
  revision: number;
}

export async function windows(pool: Pool, pipeline: string): Promise<WindowRow[]> {
  const { rows } = await pool.query(
    `SELECT group_key, window_start, window_end, event_count, value_sum, status, revision
       FROM straggler.window_results WHERE pipeline = $1 ORDER BY group_key, window_start, window_end`,
    [pipeline],
  );
  return rows as WindowRow[];
}

/** `"HH:MM"` of an ISO instant (tests on one day). */
export const hhmm = (iso: string | null) => (iso === null ? null : iso.slice(11, 16));

/** Windows as `"[12:00,12:10)=19 final"` strings, for exact comparisons. */
export async function windowSummary(pool: Pool, pipeline: string, field: "sum" | "count" = "sum"): Promise<string[]> {
  return (await windows(pool, pipeline)).map(
    (w) =>
      `${w.group_key ? w.group_key + " " : ""}[${hhmm(w.window_start)},${hhmm(w.window_end)})=${field === "sum" ? w.value_sum : w.event_count} ${w.status}`,
  );
}

export async function checkpoint(
  pool: Pool,
  pipeline: string,
): Promise<{ watermark: string | null; batch_id: number; last_offset: number }> {
  const { rows } = await pool.query(
    "SELECT watermark, batch_id, last_offset FROM straggler.checkpoints WHERE pipeline = $1",
    [pipeline],
  );
  return rows[0];
}

export async function ledger(
  pool: Pool,
  pipeline: string,
): Promise<{ landed: number; accepted: number; quarantined: number }> {
  const { rows } = await pool.query("SELECT landed, accepted, quarantined FROM straggler.ledger WHERE pipeline = $1", [
    pipeline,
  ]);
  return rows[0] ?? { landed: 0, accepted: 0, quarantined: 0 };
}
