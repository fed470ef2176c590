/**
 * Bronze's event-id index holds a 64-bit key of the id, not its text (drizzle/0050_bronze_narrow_keys.sql:
 * 28 B an event against 38 at 1M events, 50 at 10M). `straggler.event_id_key(id)`: PostgreSQL's `hashtext` of
 * the id without its last 4 characters in the high 32 bits, of the whole id in the low 32, so that ids that
 * differ only in their last characters (a counter's, as ids are often made) share their high bits and land on
 * the same few leaf pages, as the text did. A read by event id names the key, so that the index can serve it,
 * and the id, which decides: two ids with one key cost a heap visit, never a wrong answer.
 */

/** SQL: the key the event-id index holds, of the text expression `column` (`b.event_id`, `x.id`). */
export function eventIdKey(column: string): string {
  return `straggler.event_id_key(${column})`;
}

/** SQL: the bronze row's event id `row` (`o.event_id`) is `other` (a text expression), written for the event-id index. */
export function sameEventId(row: string, other: string): string {
  return `${eventIdKey(row)} = ${eventIdKey(other)} AND ${row} = ${other}`;
}
