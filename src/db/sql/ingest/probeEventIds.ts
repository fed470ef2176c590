/**
 * Before a landing's COPY: does any of its accepted event ids already have an
 * accepted row of the pipeline in bronze? When none does (and no id comes twice
 * within the landing), the landing's dedupe (dedupeLanding.ts) would change no
 * row, and the landing skips it. Run in the landing's transaction, under the
 * append lock, before any of its rows is written: the probe of a new id finds no
 * index entry at all, where the dedupe after the COPY finds the row just written
 * and reads it from the heap to see that it is the landing's own (6.5 µs a row
 * against about 1 µs on the peers workload at 1M events: BENCHMARKS.md).
 *
 * The probe is the partial event-id index (`status = 'accepted'`); `pipeline || ''`
 * keeps the planner on it whatever the statistics say (see dedupeLanding.ts).
 * 1,750 new ids: 3.4 ms (2 µs an id, one descent of the index each).
 */
import { arrayText } from "../../copyText.js";
import { inlineParams } from "../../inlineParams.js";
import { sameEventId } from "../fragments/eventIdKey.js";

// One index probe per id (a scalar subquery with LIMIT, as in the dedupe): written as `event_id = ANY ($2)`,
// the planner took a parallel scan of the whole partition for a few thousand ids (39 ms against 3.4 ms).
const PROBE_EVENT_IDS_SQL = `
SELECT EXISTS (SELECT 1 FROM unnest($2::text[]) AS x(id)
                WHERE (SELECT 1 FROM straggler.bronze_events o
                        WHERE ${sameEventId("o.event_id", "x.id")} AND o.pipeline || '' = $1 AND o.status = 'accepted' LIMIT 1) IS NOT NULL) AS found`;

/**
 * The probe as text for a multi-statement exchange (the landing's first, under the append lock), its answer
 * read by `eventIdFound`; `eventIds` must not be empty (an empty landing has nothing to probe).
 */
export function probeEventIdsText(pipeline: string, eventIds: readonly string[]): string {
  return inlineParams(PROBE_EVENT_IDS_SQL, [pipeline, arrayText(eventIds)]);
}

/** The answer to `probeEventIdsText`: whether an id was found. */
export function eventIdFound(rows: { found: boolean }[]): boolean {
  return rows[0]!.found === true;
}
