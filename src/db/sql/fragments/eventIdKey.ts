/**
 * Bronze's event-id index holds two 4-byte keys of the id, not its text (drizzle/0050_bronze_narrow_keys.sql:
 * 21 B an event against 38 at 1M events): `straggler.event_id_high(id)`, PostgreSQL's `hashtext` of the id
 * without its last 4 characters, and `straggler.event_id_low(id)`, those 4 characters' codes. Ids made by a
 * counter share the high key in runs and are inserted in order within a run, so the index's pages fill as they
 * would in id order. A read by event id names both keys, so that the index can serve it, and the id, which
 * decides: two ids with the same keys cost a heap visit, never a wrong answer.
 */

/** SQL: the event-id index's keys of the text expression `column` (`b.event_id`, `x.id`), as a list of two. */
export function eventIdKeys(column: string): string {
  return `straggler.event_id_high(${column}), straggler.event_id_low(${column})`;
}

/** SQL: the bronze row's event id `row` (`o.event_id`) is `other` (a text expression), written for the event-id index. */
export function sameEventId(row: string, other: string): string {
  return `straggler.event_id_high(${row}) = straggler.event_id_high(${other}) AND straggler.event_id_low(${row}) = straggler.event_id_low(${other}) AND ${row} = ${other}`;
}
