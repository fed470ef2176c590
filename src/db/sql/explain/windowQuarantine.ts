/**
 * One key's quarantined bronze rows whose event time falls in `[start, end)`: the rows that
 * would have counted in the window had they been accepted (a row without a readable event time
 * or key cannot be placed in any window and is not among them). Reads bronze only through its
 * classification and landing columns. Instants are ISO 8601 UTC strings.
 */
import type { HistoryEvent } from "../../../core/historyTypes.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { ingestionTimeOf } from "../fragments/ingestionTime.js";

/** A quarantined row that would have fallen in the window. */
export interface WindowQuarantineRow extends Omit<HistoryEvent, "supersededBy"> {
  reason: string | null;
  detail: string | null;
}

/** At most this many rows are listed; the count is given whole. */
const QUARANTINE_ROWS_LISTED = 1000;

const WINDOW_QUARANTINE_SQL = `SELECT b.seq, b.event_id, b.event_time, ${ingestionTimeOf("b")} AS ingestion_time, b.landed_at, b.value, b.reason, b.detail, count(*) OVER () AS total
  FROM straggler.bronze_events b
 WHERE b.pipeline = $1 AND b.group_key = $2 AND b.status = 'quarantined' AND b.event_time >= $3 AND b.event_time < $4
 ORDER BY b.seq LIMIT ${QUARANTINE_ROWS_LISTED}`;

/**
 * @param groupKey the stored key; `start` inclusive, `end` exclusive (ISO 8601)
 * @returns the first `QUARANTINE_ROWS_LISTED` rows by `seq`, and how many there are
 * @throws the database's error when it cannot be reached
 */
export async function readWindowQuarantine(
  client: Queryable,
  pipeline: string,
  groupKey: string,
  start: string,
  end: string,
): Promise<{ rows: WindowQuarantineRow[]; total: number }> {
  const { rows } = await client.query(
    prepared("explain_window_quarantine", WINDOW_QUARANTINE_SQL, [pipeline, groupKey, start, end]),
  );
  return {
    total: rows.length === 0 ? 0 : Number(rows[0].total),
    rows: rows.map((r) => ({
      seq: Number(r.seq),
      eventId: r.event_id as string,
      eventTime: r.event_time as string,
      ingestionTime: r.ingestion_time as string,
      landedAt: r.landed_at as string,
      value: r.value as string | null,
      reason: r.reason as string | null,
      detail: r.detail as string | null,
    })),
  };
}
