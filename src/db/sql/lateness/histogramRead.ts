/**
 * The lateness histogram of a pipeline (src/db/sql/lateness/histogramUpdate.ts writes it) with
 * what the advisor reads beside it, in one statement and so one snapshot: the recorded batches'
 * figures (the histogram covers the pipeline's history when it counted as many batches as
 * `straggler.batch_progress` holds). Cost: the histogram's distinct values plus one aggregate
 * over `straggler.batch_progress` of the pipeline; no bronze row is read.
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

/** A measure of `straggler.lateness_histogram` (migration 0034). */
type HistogramMeasure = "lateness_us" | "pair_slack_ms" | "event_slack_ms" | "window_slack_ms" | "batches";

/** The histogram and its context. Values and counts are exact (`bigint` values, whole-number counts). */
export interface LatenessHistogramRead {
  /** Per measure: distinct value → rows with it (no zero counts), values ascending. */
  measures: Map<HistogramMeasure, [bigint, number][]>;
  /** Recorded batches, their dropped pairs summed, open windows after them (null without batches). */
  batches: number;
  recordedDroppedPairs: number;
  openMax: number | null;
  openMean: number | null;
}

const READ_LATENESS_HISTOGRAM_SQL = `SELECT p.batches, p.dropped, p.open_max, p.open_mean,
       (SELECT coalesce(json_agg(json_build_array(h.measure, h.value::text, h.rows::text)
                                 ORDER BY h.measure, h.value), '[]')
          FROM straggler.lateness_histogram h WHERE h.pipeline = $1 AND h.rows <> 0) AS histogram
  FROM (SELECT count(*)::int AS batches, coalesce(sum(num_rows_dropped_by_watermark), 0)::bigint::text AS dropped,
               max(num_rows_total)::int AS open_max, avg(num_rows_total)::float8 AS open_mean
          FROM straggler.batch_progress WHERE pipeline = $1) p`;

interface HistogramRow {
  batches: number;
  dropped: string;
  open_max: number | null;
  open_mean: number | null;
  histogram: [HistogramMeasure, string, string][];
}

/**
 * Reads the histogram of `pipeline` and its context.
 * @throws database errors
 */
export async function readLatenessHistogramOf(client: Queryable, pipeline: string): Promise<LatenessHistogramRead> {
  const query = prepared("lateness_histogram_read", READ_LATENESS_HISTOGRAM_SQL, [pipeline]);
  const r = (await client.query<HistogramRow>(query)).rows[0]!;
  const measures = new Map<HistogramMeasure, [bigint, number][]>();
  for (const [measure, value, rows] of r.histogram) {
    let list = measures.get(measure);
    if (!list) measures.set(measure, (list = []));
    list.push([BigInt(value), Number(rows)]);
  }
  return {
    measures, batches: r.batches, recordedDroppedPairs: Number(r.dropped), openMax: r.open_max, openMean: r.open_mean,
  };
}
