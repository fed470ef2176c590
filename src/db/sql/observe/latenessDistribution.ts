/**
 * The distribution of lateness (ingestion time − event time) over a
 * pipeline's accepted bronze rows, computed in PostgreSQL in one statement:
 * exact nearest-rank percentiles (`percentile_disc`) and a histogram over
 * given edges. Optionally per group key.
 */
import type { Queryable } from "../../pool.js";
import { ingestionTimeJoined, joinSourceOf } from "../fragments/ingestionTime.js";
import { notSuperseded } from "../fragments/superseded.js";

/** Lateness figures in epoch-µs differences (exact `bigint`); null when there are no rows. */
export interface LatenessFigures {
  count: number;
  minUs: bigint | null;
  p50Us: bigint | null;
  p90Us: bigint | null;
  p99Us: bigint | null;
  p999Us: bigint | null;
  maxUs: bigint | null;
}

/** Histogram bucket `i`: 0 = below the first edge, i = `[edges[i-1], edges[i])`, last = at or above the last edge. */
export interface LatenessBucket {
  bucket: number;
  count: number;
}

/** An event-time range `[from, to)` as ISO 8601 strings; null ends are unbounded. */
export interface EventTimeRange {
  from: string | null;
  to: string | null;
}

// A row's ingestion time: its own, else its source's, by a join (these read every row of the range).
const LATENESS_US = `(((extract(epoch from ${ingestionTimeJoined("b")}) - extract(epoch from b.event_time)) * 1000000)::bigint)`;
const ROWS = `straggler.bronze_events b ${joinSourceOf("b")}`;
// Superseded versions (admission.dedupe: latest) are left out: fragments/superseded.ts.
const ACCEPTED_IN_RANGE = `b.pipeline = $1 AND b.status = 'accepted' AND ${notSuperseded("b")}
   AND ($2::timestamptz IS NULL OR b.event_time >= $2) AND ($3::timestamptz IS NULL OR b.event_time < $3)`;
const FIGURES = `count(*)::int AS count, min(l)::text AS min_us,
       (percentile_disc(0.5) WITHIN GROUP (ORDER BY l))::text AS p50_us,
       (percentile_disc(0.9) WITHIN GROUP (ORDER BY l))::text AS p90_us,
       (percentile_disc(0.99) WITHIN GROUP (ORDER BY l))::text AS p99_us,
       (percentile_disc(0.999) WITHIN GROUP (ORDER BY l))::text AS p999_us,
       max(l)::text AS max_us`;

const READ_LATENESS_FIGURES_NAME = "lateness_figures";
const READ_LATENESS_FIGURES_SQL = `SELECT ${FIGURES}
  FROM (SELECT ${LATENESS_US} AS l FROM ${ROWS} WHERE ${ACCEPTED_IN_RANGE}) x`;

const READ_LATENESS_FIGURES_BY_KEY_NAME = "lateness_figures_by_key";
/** Keys decoded by `straggler.key_out` (the null group is SQL NULL), most rows first. */
const READ_LATENESS_FIGURES_BY_KEY_SQL = `SELECT straggler.key_out(group_key) AS group_key, ${FIGURES}
  FROM (SELECT b.group_key, ${LATENESS_US} AS l FROM ${ROWS} WHERE ${ACCEPTED_IN_RANGE}) x
 GROUP BY group_key ORDER BY count(*) DESC, group_key`;

const READ_LATENESS_HISTOGRAM_NAME = "lateness_histogram";
const READ_LATENESS_HISTOGRAM_SQL = `SELECT width_bucket(l, $4::bigint[]) AS bucket, count(*)::int AS count
  FROM (SELECT ${LATENESS_US} AS l FROM ${ROWS} WHERE ${ACCEPTED_IN_RANGE}) x
 GROUP BY 1 ORDER BY 1`;

type FiguresRow = {
  count: number;
  min_us: string | null;
  p50_us: string | null;
  p90_us: string | null;
  p99_us: string | null;
  p999_us: string | null;
  max_us: string | null;
};
const big = (v: string | null) => (v === null ? null : BigInt(v));
const figures = (r: FiguresRow): LatenessFigures => ({
  count: r.count,
  minUs: big(r.min_us),
  p50Us: big(r.p50_us),
  p90Us: big(r.p90_us),
  p99Us: big(r.p99_us),
  p999Us: big(r.p999_us),
  maxUs: big(r.max_us),
});

/**
 * Lateness figures over the accepted rows of `pipeline` whose event time is in `range`.
 * @throws database errors
 */
export async function readLatenessFigures(
  client: Queryable,
  pipeline: string,
  range: EventTimeRange,
): Promise<LatenessFigures> {
  const { rows } = await client.query<FiguresRow>({
    name: READ_LATENESS_FIGURES_NAME,
    text: READ_LATENESS_FIGURES_SQL,
    values: [pipeline, range.from, range.to],
  });
  return figures(rows[0]!);
}

/**
 * The same figures per group key (`groupKey` decoded: null for the null group), most rows first.
 * @throws database errors
 */
export async function readLatenessFiguresByKey(
  client: Queryable,
  pipeline: string,
  range: EventTimeRange,
): Promise<(LatenessFigures & { groupKey: string | null })[]> {
  const { rows } = await client.query<FiguresRow & { group_key: string | null }>({
    name: READ_LATENESS_FIGURES_BY_KEY_NAME,
    text: READ_LATENESS_FIGURES_BY_KEY_SQL,
    values: [pipeline, range.from, range.to],
  });
  return rows.map((r) => ({ groupKey: r.group_key, ...figures(r) }));
}

/**
 * Row counts per histogram bucket over `edgesUs` (ascending lateness edges, µs); empty buckets are absent.
 * @throws database errors
 */
export async function readLatenessHistogram(
  client: Queryable,
  pipeline: string,
  range: EventTimeRange,
  edgesUs: bigint[],
): Promise<LatenessBucket[]> {
  const { rows } = await client.query<LatenessBucket>({
    name: READ_LATENESS_HISTOGRAM_NAME,
    text: READ_LATENESS_HISTOGRAM_SQL,
    values: [pipeline, range.from, range.to, edgesUs.map(String)],
  });
  return rows;
}
