/**
 * One key's accepted bronze rows with event time in `[start, end)` (a window's or a session
 * span's), each with the row that superseded it (`admission.dedupe: latest`), by `seq`. Reads
 * bronze only through its classification and landing columns (event id, event time, ingestion
 * time, group key, value, status, landed at, seq, pipeline). Instants are ISO 8601 UTC strings,
 * values numeric strings.
 */
import type { HistoryEvent } from "../../../core/historyTypes.js";
import { formatInstant } from "../../../core/instants.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { ingestionTimeOf } from "../fragments/ingestionTime.js";

/** An accepted bronze row of the window (`supersededBy`: the `seq` of the version that superseded it, or null). */
export type WindowEventRow = HistoryEvent;

// Instants as epoch µs text, formatted here: a window can hold many rows, and formatInstant is several
// times cheaper than the pool's parser of timestamptz text (src/db/pool.ts).
const us = (column: string) => `(extract(epoch from ${column}) * 1000000)::bigint::text`;
const WINDOW_EVENTS_SQL = `SELECT b.seq, b.event_id, ${us("b.event_time")} AS event_us, ${us(ingestionTimeOf("b"))} AS ingestion_us, ${us("b.landed_at")} AS landed_us,
       b.value, s.superseded_by
  FROM straggler.bronze_events b
  LEFT JOIN straggler.superseded_events s ON s.seq = b.seq AND s.pipeline = b.pipeline
 WHERE b.pipeline = $1 AND b.group_key = $2 AND b.status = 'accepted' AND b.event_time >= $3 AND b.event_time < $4
 ORDER BY b.seq`;

/**
 * @param groupKey the stored key (`NULL_KEY` for the null group)
 * @param start ISO 8601 instant, inclusive; `end` exclusive
 * @returns the rows by `seq`
 * @throws the database's error when it cannot be reached
 */
export async function readWindowEvents(
  client: Queryable,
  pipeline: string,
  groupKey: string,
  start: string,
  end: string,
): Promise<WindowEventRow[]> {
  const { rows } = await client.query(
    prepared("explain_window_events", WINDOW_EVENTS_SQL, [pipeline, groupKey, start, end]),
  );
  return rows.map((r) => ({
    seq: Number(r.seq),
    eventId: r.event_id as string,
    eventTime: formatInstant(BigInt(r.event_us)),
    ingestionTime: formatInstant(BigInt(r.ingestion_us)),
    landedAt: formatInstant(BigInt(r.landed_us)),
    value: r.value as string | null,
    supersededBy: r.superseded_by === null ? null : Number(r.superseded_by),
  }));
}
