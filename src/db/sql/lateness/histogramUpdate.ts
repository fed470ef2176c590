/**
 * The lateness histogram's share of a micro-batch (issue 26 item 2, docs/lateness.md): CTEs that
 * the batch's closing statement (src/db/sql/stream/closeBatch.ts) carries, so the batch adds its accepted
 * rows to `straggler.lateness_histogram` in its own transaction and round trip.
 *
 * With M the max accepted event time of earlier batches (the checkpoint's `max_event_time` as the
 * statement finds it, before its own UPDATE), an (event, window) pair is late at a delay of d ms
 * iff `window end <= M − d` (DESIGN §3–4), i.e. iff `d <= floor((M − end) / 1 ms)`: that floor is
 * the pair's slack, and only pairs with a slack >= 0 can be late at any delay >= 0. Counted per
 * distinct slack, the what-if's drop counts are exact for every whole-ms delay.
 *
 * Placeholders of the closing statement: $1 pipeline, $4 the batch's start offset (last `seq` of
 * the previous batch), $5 its end offset (last `seq` it read).
 */
import { BATCH_PAIRS } from "../fragments/batchPairs.js";
import { ingestionTimeOf } from "../fragments/ingestionTime.js";
import { notSuperseded } from "../fragments/superseded.js";
import { timestamptzToUs } from "../fragments/windowAssignment.js";

/** Lateness of a bronze row aliased `b`, exact µs (as src/db/sql/observe/latenessDistribution.ts). */
const LATENESS_US_OF = (b: string) =>
  `(((extract(epoch from ${ingestionTimeOf(b)}) - extract(epoch from ${b}.event_time)) * 1000000)::bigint)`;

const BATCH_LATENESS = `SELECT 'lateness_us' AS measure, ${LATENESS_US_OF("b")} AS value, 1 AS n
           FROM straggler.bronze_events b
          WHERE b.pipeline = $1 AND b.seq > $4 AND b.seq <= $5 AND b.status = 'accepted'
            AND ${notSuperseded("b", "$5")}`;

/**
 * The CTEs (each followed by a comma) for a batch of `pairs`: `windows` when the batch filled the
 * pairs table (fixed-length and calendar windows), `lateness` when only its rows' lateness and the
 * batch count are added (session windows, whose pairs the table does not hold).
 */
export function latenessHistogramCtes(pairs: "windows" | "lateness"): string {
  const upsert = (source: string) => `lhist AS (
         INSERT INTO straggler.lateness_histogram AS h (pipeline, measure, value, rows)
         SELECT $1, measure, value, sum(n) FROM (${source}) x GROUP BY measure, value
         ON CONFLICT (pipeline, measure, value) DO UPDATE SET rows = h.rows + excluded.rows),`;
  if (pairs === "lateness") return upsert(`${BATCH_LATENESS} UNION ALL SELECT 'batches', 0, 1`);
  return `lm AS (SELECT ${timestamptzToUs("max_event_time")} AS m_us FROM straggler.checkpoints WHERE pipeline = $1),
       lp AS (SELECT p.seq, p.group_key, p.we_us, (lm.m_us - p.we_us) / 1000 AS slack_ms
                FROM ${BATCH_PAIRS} p CROSS JOIN lm WHERE lm.m_us >= p.we_us),
       lw AS (SELECT group_key, we_us, max(slack_ms) AS slack_ms FROM lp GROUP BY group_key, we_us),
       lprev AS (SELECT w.slack_ms FROM straggler.lateness_windows w
                   JOIN lw ON w.pipeline = $1 AND w.group_key = lw.group_key AND w.window_end_us = lw.we_us),
       lwin AS (
         INSERT INTO straggler.lateness_windows AS w (pipeline, group_key, window_end_us, slack_ms)
         SELECT $1, group_key, we_us, slack_ms FROM lw
         ON CONFLICT (pipeline, group_key, window_end_us)
         DO UPDATE SET slack_ms = greatest(w.slack_ms, excluded.slack_ms)),
       ${upsert(`${BATCH_LATENESS}
         UNION ALL SELECT 'pair_slack_ms', slack_ms, 1 FROM lp
         UNION ALL SELECT 'event_slack_ms', max(slack_ms), 1 FROM lp GROUP BY seq
         UNION ALL SELECT 'window_slack_ms', slack_ms, 1 FROM lw
         UNION ALL SELECT 'window_slack_ms', slack_ms, -1 FROM lprev
         UNION ALL SELECT 'batches', 0, 1`)}`;
}
