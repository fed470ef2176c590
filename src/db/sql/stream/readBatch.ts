/**
 * Reads a micro-batch's input in one statement (DESIGN §2–4): picks its bronze
 * `seq` range (Spark's offset range: at most `maxRowsPerBatch` rows after the
 * checkpoint), describes it (Spark's `numInputRows` and `eventTime`, and per
 * input the max event and ingestion time: docs/DESIGN.md "Several inputs"),
 * tells whether any of its rows supersede an earlier version, and — for
 * fixed-length and calendar windows — fills the session's pairs table
 * (`BATCH_PAIRS`) with its (event, window) pairs split by Spark's late rule:
 * a pair is late when its window ends at or before the watermark of earlier
 * batches. Session windows stage their events themselves
 * (src/db/sql/stream/sessionStream.ts).
 *
 * The batch's rows are read once: one index range of bronze, and one
 * primary-key probe of `straggler.superseded_events` per row only when the
 * pipeline has a supersession by a row in the batch's range (one look for it
 * first: `notSupersededOf`). Input rows are
 * the accepted ones less those superseded by a row up to the batch's end
 * (fragments/superseded.ts); quarantined rows are counted, not streamed.
 */
import type { InputBatch } from "../../../core/watermark.js";
import { isoToUs } from "../../../core/instants.js";
import type { WindowSpec } from "../../../core/windows.js";
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { BATCH_PAIRS, CREATE_BATCH_PAIRS_SQL } from "../fragments/batchPairs.js";
import { notSupersededOf } from "../fragments/superseded.js";
import { aggregateWindow } from "../fragments/windowAggregates.js";
import { windowEndUs, windowsLateralUs } from "../fragments/windowAssignment.js";

/** The bronze rows of one batch: `afterSeq < seq <= lastSeq`. */
export interface BatchRange {
  /** The checkpoint's `lastSeq`: the batch starts after it. */
  afterSeq: number;
  /** The batch's last bronze `seq`. */
  lastSeq: number;
}

/** Counts of bronze rows; instants are ISO 8601 UTC strings, null when the batch has no accepted row. */
export interface BatchInput {
  /** Accepted rows, less those superseded by a later version up to the batch's end: the stream's input. */
  numInputRows: number;
  /** Quarantined rows in the range: landed, not stream input. */
  numQuarantinedRows: number;
  eventTime: { min: string | null; max: string | null; avg: string | null };
}

/** What `readBatch` found: the batch's range and input, and what its rows hold. */
export interface BatchRead {
  range: BatchRange;
  input: BatchInput;
  /** Per input that sent input rows: its max event and ingestion time (epoch µs). */
  inputs: InputBatch[];
  /** Late (event, window) pairs written to the pairs table; 0 when no pairs were assigned (session windows). */
  latePairs: number;
  /** Whether a row of the batch supersedes a version the stream read in an earlier batch (admission.dedupe: latest). */
  supersedes: boolean;
  /** Bronze rows in the range (accepted, superseded or quarantined): fewer than `maxRows` when bronze held no more when it was read. */
  rows: number;
}

/** Where the batch starts, how many rows it may hold, and (windows only) how its pairs are assigned. */
export interface BatchBounds {
  /** The checkpoint's `lastSeq`. */
  afterSeq: number;
  /** At most this many bronze rows (accepted or quarantined): `trigger.maxRowsPerBatch`. */
  maxRows: number;
  /** No bronze row past this `seq` (a replay streams one span while it lands the next). */
  untilSeq?: number;
  /**
   * Assign pairs for these windows (fixed-length or calendar); omitted for session windows. `aggregateOnTime`: the
   * on-time pairs go into the pairs table aggregated, one row per (key, window), not one per pair (the late pairs
   * stay one by one); a sum that fails then fails this read (a data exception), not the MERGE.
   */
  windows?: { spec: WindowSpec; watermarkUs: bigint | null; aggregateOnTime?: boolean };
}

const INPUT_COLUMNS = `count(*) FILTER (WHERE i.live)::int AS accepted,
       count(*) FILTER (WHERE i.status <> 'accepted')::int AS quarantined,
       min(i.event_time) FILTER (WHERE i.live) AS min_et,
       max(i.event_time) FILTER (WHERE i.live) AS max_et,
       timestamptz 'epoch' + avg(extract(epoch from i.event_time)) FILTER (WHERE i.live) * interval '1 second' AS avg_et,
       greatest(max(i.ingestion_time) FILTER (WHERE i.live),
                CASE WHEN grouping(i.input) = 0 THEN (SELECT src.it FROM src WHERE src.input = i.input) ELSE (SELECT max(src.it) FROM src) END) AS max_it`;

/**
 * The CTE that fills the pairs table from the batch's live rows `i` ($5: the watermark of earlier batches, epoch µs):
 * one row per late pair (its seq and event id; a late event has one pair per window), and one per on-time
 * (key, window) with `aggregateOnTime`, else one per on-time pair.
 */
function pairsCte(spec: WindowSpec, aggregateOnTime: boolean): string {
  const pairs = `SELECT i.seq, i.event_id, i.group_key, i.value, w.ws_us, ${windowEndUs(spec)} AS we_us,
              ($5::bigint IS NOT NULL AND ${windowEndUs(spec)} <= $5::bigint) AS late
         FROM i ${windowsLateralUs(spec, "i")}
        WHERE i.live`;
  const rows = aggregateOnTime
    ? `SELECT CASE WHEN p.late THEN p.seq END, CASE WHEN p.late THEN p.event_id END, p.group_key, p.ws_us, p.we_us, p.late,
              ${aggregateWindow("p.value")}
         FROM (${pairs}) p
        GROUP BY p.group_key, p.ws_us, p.we_us, p.late, CASE WHEN p.late THEN p.seq END, CASE WHEN p.late THEN p.event_id END`
    : `SELECT p.seq, p.event_id, p.group_key, p.ws_us, p.we_us, p.late, 1, p.value, p.value, p.value FROM (${pairs}) p`;
  return `,
     pairs AS (
       INSERT INTO ${BATCH_PAIRS} (seq, event_id, group_key, ws_us, we_us, late, n, s, lo, hi)
       ${rows}
       RETURNING late)`;
}

/**
 * $1 pipeline, $2 after `seq`, $3 max rows, $4 until `seq`; with pairs, $5 the watermark of earlier batches (epoch µs, null: none).
 * One row for the whole batch (`per_input` false), one per input it holds.
 */
function readBatchSql(spec: WindowSpec | undefined, aggregateOnTime: boolean): string {
  const pairs = spec === undefined ? "" : pairsCte(spec, aggregateOnTime);
  return `WITH r AS MATERIALIZED (
       -- NULL input: the default input (the landing writes nothing for it: migration 0042).
       SELECT b.seq, b.event_id, b.status, coalesce(b.input, 'default') AS input, b.group_key, b.value, b.event_time, b.ingestion_time, b.source_id
         FROM straggler.bronze_events b
        WHERE b.pipeline = $1 AND b.seq > $2 AND b.seq <= $4
        ORDER BY b.seq LIMIT $3),
     last AS (SELECT max(seq) AS last_seq FROM r),
     i AS MATERIALIZED (
       SELECT r.*, r.status = 'accepted' AND ${notSupersededOf("r", "$1", "last.last_seq", { after: "$2", upTo: "$4" })} AS live FROM r, last),
     -- A row that stores no ingestion time has its source's (drizzle/0053): the latest per input of the live rows'
     -- sources, each source looked up once.
     src AS (
       SELECT d.input, max(s.ingestion_time) AS it
         FROM (SELECT DISTINCT i.input, i.source_id FROM i WHERE i.live AND i.ingestion_time IS NULL) d
         JOIN straggler.bronze_sources s ON s.id = d.source_id
        GROUP BY d.input)${pairs}
SELECT grouping(i.input) = 0 AS per_input, i.input, ${INPUT_COLUMNS}, count(*)::int AS rows,
       (SELECT last_seq FROM last) AS last_seq,
       ${spec === undefined ? "0" : "(SELECT count(*) FROM pairs WHERE late)::int"} AS late_pairs,
       EXISTS (SELECT 1 FROM straggler.superseded_events s
                WHERE s.pipeline = $1 AND s.superseded_by > $2 AND s.superseded_by <= (SELECT last_seq FROM last)) AS supersedes
  FROM i GROUP BY GROUPING SETS ((), (i.input))`;
}

interface Row {
  per_input: boolean;
  input: string | null;
  accepted: number;
  quarantined: number;
  min_et: string | null;
  max_et: string | null;
  avg_et: string | null;
  max_it: string | null;
  last_seq: number | null;
  late_pairs: number;
  supersedes: boolean;
  rows: number;
}

/**
 * Reads the next micro-batch of `pipeline` after `bounds.afterSeq`; with
 * `bounds.windows`, also fills the pairs table (create it first on `client`:
 * `ensureBatchPairs`).
 * @returns the batch, or null when bronze holds nothing after `afterSeq` (up to `untilSeq`)
 * @throws the database's error
 */
export async function readBatch(client: PoolClient, pipeline: string, bounds: BatchBounds): Promise<BatchRead | null> {
  const spec = bounds.windows?.spec;
  const params: unknown[] = [pipeline, bounds.afterSeq, bounds.maxRows, bounds.untilSeq ?? Number.MAX_SAFE_INTEGER];
  // $5, the watermark, only where pairs are assigned: a statement takes as many values as it names.
  if (bounds.windows !== undefined) params.push(bounds.windows.watermarkUs?.toString() ?? null);
  const aggregate = bounds.windows?.aggregateOnTime === true;
  const { rows } = await client.query(
    prepared(aggregate ? "read_batch_agg" : "read_batch", readBatchSql(spec, aggregate), params),
  );
  const all = (rows as Row[]).find((r) => !r.per_input)!;
  if (all.last_seq === null) return null;
  return {
    range: { afterSeq: bounds.afterSeq, lastSeq: all.last_seq },
    input: {
      numInputRows: all.accepted,
      numQuarantinedRows: all.quarantined,
      eventTime: { min: all.min_et, max: all.max_et, avg: all.avg_et },
    },
    inputs: (rows as Row[])
      .filter((r) => r.per_input && r.accepted > 0)
      .map((r) => ({
        input: r.input!,
        maxEventUs: r.max_et === null ? null : isoToUs(r.max_et),
        maxIngestionUs: r.max_it === null ? null : isoToUs(r.max_it),
      })),
    latePairs: all.late_pairs,
    supersedes: all.supersedes,
    rows: all.rows,
  };
}

/** The sessions whose pairs table exists (a session-temporary table: it lives as long as the connection). */
const pairsReady = new WeakSet<PoolClient>();

/**
 * Creates the pairs table on `client`'s session, once per session. Call
 * outside a transaction: a table created in a batch that then rolled back
 * would be gone though remembered.
 * @throws the database's error
 */
export async function ensureBatchPairs(client: PoolClient): Promise<void> {
  if (pairsReady.has(client)) return;
  await client.query(CREATE_BATCH_PAIRS_SQL);
  pairsReady.add(client);
}
