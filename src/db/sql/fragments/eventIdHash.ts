/**
 * Bronze's event-id index holds a 64-bit hash of the id, not its text (drizzle/0050_bronze_narrow_keys.sql:
 * 28 B an event against 38). A read by event id names the hash, so that the index can serve it, and the id,
 * which decides: two ids with one hash cost a heap visit, never a wrong answer.
 */

/** SQL: the hash the event-id index holds, of the text expression `column` (`b.event_id`, `x.id`). */
export function eventIdHash(column: string): string {
  return `hashtextextended(${column}, 0)`;
}

/** SQL: the bronze row's event id `row` (`o.event_id`) is `other` (a text expression), written for the event-id index. */
export function sameEventId(row: string, other: string): string {
  return `${eventIdHash(row)} = ${eventIdHash(other)} AND ${row} = ${other}`;
}
