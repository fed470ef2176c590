/**
 * Where a landing's rows begin in bronze's `seq` order, read under the pipeline's append lock.
 *
 * - `bronzeSeqHighWaterText`: the last value bronze's sequence has handed out. Every row committed so far, of any
 *   pipeline, has a `seq` at most this, and every row written after it is read gets a higher one: a landing's rows
 *   are its pipeline's rows above it (`pipeline = $1 AND seq > $2`, the (pipeline, seq) index's range). One read of
 *   the sequence, whatever bronze holds.
 *   The sequence hands out values one at a time (CACHE 1), as bronze's order needs.
 *   For a replay, also its pipeline's highest `seq` (above the replay's own last one: one short index range), which
 *   its filter of its own ids and its micro-batches fed from the span's summary compare with where they left it.
 * - `readPipelineTop`: a pipeline's highest `seq` above a known floor (the page's cache key of a lateness report).
 *
 * The landings once read `max(seq)` of the pipeline instead. Its plan depends on the statistics: for a pipeline new
 * since bronze's last ANALYZE (estimated at one row) the planner took a plain aggregate over every row of the
 * pipeline in the (pipeline, seq) index instead of one backward step per partition — 25 ms a landing once an HTTP
 * pipeline held 90,000 rows, growing with every landing (BENCHMARKS.md "Issue 30, round sixteen").
 */
import type { Queryable } from "../../pool.js";
import { inlineParams } from "../../inlineParams.js";
import { prepared } from "../../prepared.js";

const READ_PIPELINE_TOP = "bronze_pipeline_top";

/** $1's highest `seq` above $2, else $2: one range of the (pipeline, seq) index, as short as the rows above $2. */
const PIPELINE_TOP_SQL =
  "coalesce((SELECT max(seq) FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2), $2)";

/**
 * The statement as text (for a multi-statement exchange): one row, `seq` (read by `seqOf`: the sequence's last value
 * handed out; before `nextval` has run since a start or a `setval(…, false)`, the value below its next one, 0 for a
 * new sequence), and with `topOf` also `top`: the highest `seq` of that pipeline above `floor` (a replay's own last
 * landed `seq`: src/ingest/landedIds.ts `floor`), or `floor` when it has none above.
 * The pipeline's rows above a replay's floor are only another writer's: the range read is empty or short, whatever
 * the plan. With `floor` 0 (nothing landed by the replay yet) `top` is 0 for an empty pipeline and -1 for one with
 * rows (how high is not read: an EXISTS, one index entry), which neither a filter of the replay's ids nor a
 * micro-batch's checkpoint ever equals.
 */
export function bronzeSeqHighWaterText(topOf?: { pipeline: string; floor: number }): string {
  const top =
    topOf === undefined
      ? ""
      : topOf.floor === 0
        ? inlineParams(
            ", CASE WHEN EXISTS (SELECT 1 FROM straggler.bronze_events WHERE pipeline = $1) THEN -1 ELSE 0 END AS top",
            [topOf.pipeline],
          )
        : inlineParams(`, ${PIPELINE_TOP_SQL} AS top`, [topOf.pipeline, topOf.floor]);
  return `SELECT (CASE WHEN is_called THEN last_value ELSE last_value - 1 END)::int8 AS seq${top} FROM straggler.bronze_events_seq_seq`;
}

/** The `seq` of the answer to `bronzeSeqHighWaterText`. */
export function seqOf(rows: { seq: number | string }[]): number {
  return Number(rows[0]!.seq);
}

/**
 * The highest `seq` of `pipeline` above `floor`, else `floor` (above a micro-batch checkpoint: the rows not streamed
 * yet, read whatever the plan; the page's cache key of a lateness report).
 * @throws the database's error
 */
export async function readPipelineTop(client: Queryable, pipeline: string, floor: number): Promise<number> {
  const { rows } = await client.query(
    prepared(READ_PIPELINE_TOP, `SELECT ${PIPELINE_TOP_SQL}::int8 AS seq`, [pipeline, floor]),
  );
  return seqOf(rows);
}
