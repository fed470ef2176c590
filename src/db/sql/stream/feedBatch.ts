/**
 * A micro-batch's input from its landing's summary (src/core/spanSummary.ts), not read back from bronze: what
 * `readBatch` (src/db/sql/stream/readBatch.ts) finds and writes for a batch whose range is exactly one landing's
 * rows, every row as it was classified (no dedupe changed one), for fixed-length windows with the on-time pairs
 * aggregated (`aggregateOnTime`). In one statement: the on-time (key, window) rows into the pairs table, each
 * late pair with its event's `seq` and event id (the late windows' rows read from bronze by `seq`: a late
 * window is rare), and the batch's event and ingestion times described as readBatch describes them (the same
 * expressions over the same values: the average is `avg(extract(epoch …))`'s numeric quotient).
 */
import type { SpanSummary } from "../../../core/spanSummary.js";
import { epochSecondsText, eventSum, summaryWindows, windowSum } from "../../../core/spanSummary.js";
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { BATCH_PAIRS } from "../fragments/batchPairs.js";
import { usToTimestamptz } from "../fragments/windowAssignment.js";
import type { BatchRead } from "./readBatch.js";

/** A landing's rows as its summary holds them, and where they are in bronze. */
export interface LandedSpan {
  summary: SpanSummary;
  /**
   * The pipeline's highest `seq` before the landing, read under the append lock above the replay's own last one
   * (src/db/sql/ingest/bronzeSeqHighWater.ts: that floor when none is above it; -1, which no checkpoint equals, for a
   * pipeline with rows when the replay has landed none yet). The batch's checkpoint must be there (then no row of the
   * pipeline lies between it and the landing's).
   */
  seqBefore: number;
  /** The landing's first and last `seq`; row `i` of the summary is `firstSeq + i` (the range has no gap). */
  firstSeq: number;
  lastSeq: number;
  /** The input the landing's rows came from. */
  input: string;
}

/**
 * Whether `span` can stand for the read of the batch after `afterSeq` of at most `maxRows` rows: its summary is
 * usable, the batch starts where the landing did, and the landing's range holds its rows and no gap (so a row's
 * place gives its `seq`).
 */
export function feedsBatch(span: LandedSpan | undefined, afterSeq: number, maxRows: number): span is LandedSpan {
  return (
    span !== undefined &&
    span.summary.unusable === null &&
    span.seqBefore === afterSeq &&
    span.summary.rows <= maxRows &&
    span.lastSeq - span.firstSeq + 1 === span.summary.rows
  );
}

const FEED_SQL = `WITH w AS (
       SELECT * FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::numeric[], $7::numeric[], $8::numeric[])
         AS w(group_key, ws_us, we_us, n, s, lo, hi)),
     l AS (SELECT * FROM unnest($9::bigint[], $10::bigint[], $11::bigint[]) AS l(seq, ws_us, we_us)),
     pairs AS (
       INSERT INTO ${BATCH_PAIRS} (seq, event_id, group_key, ws_us, we_us, late, n, s, lo, hi)
       SELECT NULL, NULL, w.group_key, w.ws_us, w.we_us, false, w.n, w.s, w.lo, w.hi FROM w
       UNION ALL
       SELECT b.seq, b.event_id, b.group_key, l.ws_us, l.we_us, true, 1, b.value, b.value, b.value
         FROM l JOIN straggler.bronze_events b ON b.pipeline = $1 AND b.seq = l.seq
       RETURNING late)
SELECT (SELECT count(*) FROM pairs WHERE late)::int AS late_pairs,
       ${usToTimestamptz("$12::bigint")} AS min_et, ${usToTimestamptz("$13::bigint")} AS max_et,
       timestamptz 'epoch' + ($14::numeric / $15::bigint) * interval '1 second' AS avg_et,
       ${usToTimestamptz("$16::bigint")} AS max_it`;

/**
 * Fills the pairs table of `client`'s session from `span` (create it first: `ensureBatchPairs`): a window is late
 * when it ends at or before `watermarkUs`, the watermark of earlier batches (Spark's late rule), as readBatch rules.
 * @returns the batch as `readBatch` would read it (`supersedes` false: no row of the landing was deduped)
 * @throws the database's error (a data exception when a sum does not fit `numeric`)
 */
export async function feedBatch(
  client: PoolClient,
  pipeline: string,
  span: LandedSpan,
  afterSeq: number,
  watermarkUs: bigint | null,
): Promise<BatchRead> {
  const s = span.summary;
  const onTime: [string[], string[], string[], number[], (string | null)[], (string | null)[], (string | null)[]] = [
    [],
    [],
    [],
    [],
    [],
    [],
    [],
  ];
  const late: [string[], string[], string[]] = [[], [], []];
  for (const w of summaryWindows(s)) {
    if (watermarkUs !== null && BigInt(w.endUs) <= watermarkUs) {
      for (const row of w.rows) {
        late[0].push(String(span.firstSeq + row));
        late[1].push(String(w.startUs));
        late[2].push(String(w.endUs));
      }
      continue;
    }
    onTime[0].push(w.groupKey);
    onTime[1].push(String(w.startUs));
    onTime[2].push(String(w.endUs));
    onTime[3].push(w.n);
    onTime[4].push(windowSum(w));
    onTime[5].push(w.min);
    onTime[6].push(w.max);
  }
  const none = s.accepted === 0;
  const times = none
    ? [null, null, null, null, null]
    : [
        s.minEventUs!.toString(),
        s.maxEventUs!.toString(),
        epochSecondsText(eventSum(s)),
        s.accepted,
        s.maxIngestionUs!.toString(),
      ];
  const { rows } = await client.query(prepared("feed_batch", FEED_SQL, [pipeline, ...onTime, ...late, ...times]));
  const r = rows[0] as {
    late_pairs: number;
    min_et: string | null;
    max_et: string | null;
    avg_et: string | null;
    max_it: string | null;
  };
  return {
    range: { afterSeq, lastSeq: span.lastSeq },
    input: {
      numInputRows: s.accepted,
      numQuarantinedRows: s.rows - s.accepted,
      eventTime: { min: r.min_et, max: r.max_et, avg: r.avg_et },
    },
    inputs: none ? [] : [{ input: span.input, maxEventUs: s.maxEventUs, maxIngestionUs: s.maxIngestionUs }],
    latePairs: r.late_pairs,
    supersedes: false,
    rows: s.rows,
  };
}
