/**
 * The figures `/metrics` reads from the database at scrape time (src/observe/metrics.ts),
 * for every listed pipeline at once, so every process and every restart reports the same.
 */
import type { Queryable } from "../../pool.js";

/** Upper bounds of the batch duration histogram, seconds (Prometheus `le`). */
export const BATCH_DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const;

/** One pipeline's figures. Counts are rows (pairs for dropped); instants are seconds since the epoch (null before the first batch). */
export interface PipelineMetrics {
  pipeline: string;
  /** Rows landed: in bronze, plus those of archives not restored (`straggler.archived_rows`), as the view `straggler.ledger` gives them (kept counts: `straggler.ledger_counts`). */
  landed: number;
  /** Of them, rows now accepted (bronze plus archives). */
  accepted: number;
  /** Of them, rows now quarantined, by reason code (e.g. `BAD_TIMESTAMP`; bronze plus archives). */
  quarantinedByReason: Record<string, number>;
  batches: number;
  inputRows: number;
  droppedPairs: number;
  /** Batches with a duration at or under each bound of `BATCH_DURATION_BUCKETS_S` (cumulative), and the durations' sum in seconds. */
  durationBuckets: number[];
  durationSumSeconds: number;
  watermarkSeconds: number | null;
  maxEventTimeSeconds: number | null;
  openWindows: number;
  backlogRows: number;
  /** Finished correction runs by status (`succeeded`, `failed`, `abandoned`: each present, 0 until one ends so), as the view `correction_history` shows it. */
  correctionRunsByStatus: Record<string, number>;
  /** Correction runs now running. */
  correctionRunsRunning: number;
  /** (key, window)s awaiting correction (`straggler.late_windows`): what the next correction run recomputes. */
  correctionBacklogWindows: number;
  windowsChanged: number;
}

const LEDGER = {
  name: "metrics_ledger",
  // The kept counts (straggler.ledger_counts: archived rows included, '' the reason of accepted rows), not a count of bronze.
  text: "SELECT pipeline, status, reason, rows AS n FROM straggler.ledger_counts WHERE pipeline = ANY($1) AND rows <> 0 ORDER BY pipeline, status, reason",
};

const STREAM = {
  name: "metrics_stream",
  text: `SELECT p.pipeline, b.batches, b.input_rows, b.dropped, h.buckets, b.duration_sum,
                extract(epoch FROM c.watermark)::float8 AS watermark, extract(epoch FROM c.max_event_time)::float8 AS max_event_time,
                (SELECT count(*) FROM straggler.window_results w WHERE w.pipeline = p.pipeline AND w.status = 'open')::bigint AS open_windows,
                (SELECT count(*) FROM straggler.bronze_events e WHERE e.pipeline = p.pipeline AND e.seq > coalesce(c.last_offset, 0))::bigint AS backlog,
                (SELECT count(*) FROM straggler.late_windows l WHERE l.pipeline = p.pipeline)::bigint AS correction_backlog
           FROM unnest($1::text[]) AS p(pipeline)
           LEFT JOIN straggler.checkpoints c ON c.pipeline = p.pipeline
          CROSS JOIN LATERAL (
                SELECT count(*)::bigint AS batches, coalesce(sum(num_input_rows), 0)::bigint AS input_rows,
                       coalesce(sum(num_rows_dropped_by_watermark), 0)::bigint AS dropped,
                       coalesce(sum(duration_ms), 0)::float8 / 1000 AS duration_sum
                  FROM straggler.batch_progress bp WHERE bp.pipeline = p.pipeline) b
          CROSS JOIN LATERAL (
                SELECT array_agg(c.n ORDER BY u.i) AS buckets
                  FROM unnest($2::float8[]) WITH ORDINALITY AS u(le, i)
                 CROSS JOIN LATERAL (SELECT count(*) AS n FROM straggler.batch_progress bp
                                      WHERE bp.pipeline = p.pipeline AND bp.duration_ms <= u.le * 1000) c) h`,
};

const CORRECTIONS = {
  name: "metrics_corrections",
  text: `SELECT pipeline, status, count(*)::bigint AS n, coalesce(sum(windows_changed), 0)::bigint AS changed
           FROM straggler.correction_history WHERE pipeline = ANY($1) GROUP BY pipeline, status`,
};

/** Reads the figures of `pipelines` (three statements, run at once: not one snapshot; a pipeline with no rows yet gets zeros). */
export async function readPipelineMetrics(client: Queryable, pipelines: string[]): Promise<PipelineMetrics[]> {
  const [ledger, stream, corrections] = await Promise.all([
    client.query({ ...LEDGER, values: [pipelines] }),
    client.query({ ...STREAM, values: [pipelines, BATCH_DURATION_BUCKETS_S] }),
    client.query({ ...CORRECTIONS, values: [pipelines] }),
  ]);
  return stream.rows.map((s) => {
    const own = ledger.rows.filter((r) => r.pipeline === s.pipeline);
    const runs = corrections.rows.filter((r) => r.pipeline === s.pipeline);
    return {
      pipeline: s.pipeline,
      landed: own.reduce((n, r) => n + r.n, 0),
      accepted: own.filter((r) => r.status === "accepted").reduce((n, r) => n + r.n, 0),
      quarantinedByReason: Object.fromEntries(
        own.filter((r) => r.status === "quarantined").map((r) => [r.reason, r.n]),
      ),
      batches: s.batches,
      inputRows: s.input_rows,
      droppedPairs: s.dropped,
      durationBuckets: (s.buckets as string[]).map(Number),
      durationSumSeconds: s.duration_sum,
      watermarkSeconds: s.watermark,
      maxEventTimeSeconds: s.max_event_time,
      openWindows: s.open_windows,
      backlogRows: s.backlog,
      // Every finished status from the start (0 until a run ends so): Prometheus's increase() cannot see a series' first sample.
      correctionRunsByStatus: {
        succeeded: 0,
        failed: 0,
        abandoned: 0,
        ...Object.fromEntries(runs.filter((r) => r.status !== "running").map((r) => [r.status, r.n])),
      },
      correctionRunsRunning: runs.find((r) => r.status === "running")?.n ?? 0,
      correctionBacklogWindows: s.correction_backlog,
      windowsChanged: runs.reduce((n, r) => n + r.changed, 0),
    };
  });
}
