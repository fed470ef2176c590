/**
 * The lateness histogram of a pipeline (src/db/sql/lateness/histogramUpdate.ts writes it) with
 * what the advisor reads beside it, in one statement and so one snapshot: the recorded batches'
 * figures (the histogram covers the pipeline's history when it counted as many batches as
 * `straggler.batch_progress` holds) and whether the live version ran them all. Cost: the histogram's distinct values plus one aggregate
 * over `straggler.batch_progress` of the pipeline and a probe of its live version; no bronze row is read.
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
  /**
   * Whether the live version ran every recorded batch (it went live before the first): else some ran under
   * another policy (a cutover since), and the recorded open windows are not the live policy's.
   */
  liveThroughout: boolean;
}

// Per measure one text of `value:rows` pairs, values ascending: on 15,421 distinct values (300k peers
// events) 11–16 ms where a JSON array of [measure, value, rows] per value took 25–32 ms, and less to send.
const READ_LATENESS_HISTOGRAM_SQL = `SELECT p.batches, p.dropped, p.open_max, p.open_mean,
       (SELECT coalesce(json_object_agg(m.measure, m.pairs), '{}')
          FROM (SELECT h.measure, string_agg(h.value::text || ':' || h.rows::text, ',' ORDER BY h.value) AS pairs
                  FROM straggler.lateness_histogram h WHERE h.pipeline = $1 AND h.rows <> 0 GROUP BY h.measure) m) AS histogram,
       coalesce((SELECT v.live_since FROM straggler.policy_versions v WHERE v.pipeline = $1 AND v.state = 'live') <= p.first_at, false) AS live_throughout
  FROM (SELECT count(*)::int AS batches, coalesce(sum(num_rows_dropped_by_watermark), 0)::bigint::text AS dropped,
               max(num_rows_total)::int AS open_max, avg(num_rows_total)::float8 AS open_mean, min(timestamp) AS first_at
          FROM straggler.batch_progress WHERE pipeline = $1) p`;

interface HistogramRow {
  batches: number;
  dropped: string;
  open_max: number | null;
  open_mean: number | null;
  live_throughout: boolean;
  /** measure → "value:rows,value:rows,…" (values ascending). */
  histogram: Partial<Record<HistogramMeasure, string>>;
}

/**
 * Reads the histogram of `pipeline` and its context.
 * @throws database errors
 */
export async function readLatenessHistogramOf(client: Queryable, pipeline: string): Promise<LatenessHistogramRead> {
  const query = prepared("lateness_histogram_read", READ_LATENESS_HISTOGRAM_SQL, [pipeline]);
  const r = (await client.query<HistogramRow>(query)).rows[0]!;
  const measures = new Map<HistogramMeasure, [bigint, number][]>();
  for (const [measure, pairs] of Object.entries(r.histogram) as [HistogramMeasure, string][]) {
    measures.set(
      measure,
      pairs.split(",").map((pair) => {
        const at = pair.indexOf(":");
        return [BigInt(pair.slice(0, at)), Number(pair.slice(at + 1))];
      }),
    );
  }
  return {
    measures,
    batches: r.batches,
    recordedDroppedPairs: Number(r.dropped),
    openMax: r.open_max,
    openMean: r.open_mean,
    liveThroughout: r.live_throughout,
  };
}
