/**
 * The metrics read from the database: each one's name, type and help, and its rows from one scrape's
 * snapshot of the figures, plus the batch duration histogram built from the recorded batches.
 * src/observe/metrics.ts reads the snapshot and registers them.
 */
import { BATCH_DURATION_BUCKETS_S, type PipelineMetrics } from "../db/sql/observe/readPipelineMetrics.js";
import type { HolderRows } from "./holderMetrics.js";

type Labels = Record<string, string>;
type Row = { labels: Labels; value: number };

/** A scrape's figures, read once and shared by every metric's collect callback. */
export interface Snapshot {
  pipelines: PipelineMetrics[];
  firing: Row[];
  /** 1 per held pipeline, 0 per other configured one. */
  held: Row[];
  /** 1 per configured pipeline some replica owns, else 0. */
  owned: Row[];
  /** Per live replica, how many of the configured pipelines it owns. */
  ownedByReplica: Row[];
  /** Per log source partition, the last offset landed (src/db/sql/ingest/logOffsets.ts). */
  logOffsets: Row[];
  /** Per configured pipeline, windows reconcile runs found differing from bronze and no correction run has recomputed yet. */
  reconcileMismatched: Row[];
  /** What holds each pipeline's watermark (src/observe/holderMetrics.ts). */
  holders: HolderRows;
  now: number;
}

/** Metrics of pipelines read from the database: name, type, help, and the rows of one snapshot. */
export const FROM_DATABASE: [string, "counter" | "gauge", string, (s: Snapshot) => Row[]][] = [
  [
    "straggler_rows_landed_total",
    "counter",
    "Rows landed in bronze (accepted and quarantined), archived ones included.",
    (s) => per(s, (m) => m.landed),
  ],
  [
    "straggler_ledger_accepted_rows",
    "gauge",
    "Landed rows now accepted, archived ones included (a failed window's rows become quarantined; a cutover may reclassify rows).",
    (s) => per(s, (m) => m.accepted),
  ],
  [
    "straggler_ledger_quarantined_rows",
    "gauge",
    "Landed rows now quarantined, by reason code, archived ones included (a failed window's rows become INVALID_VALUE; a cutover may reclassify rows).",
    (s) =>
      s.pipelines.flatMap((m) =>
        Object.entries(m.quarantinedByReason).map(([reason, value]) => ({
          labels: { pipeline: m.pipeline, reason },
          value,
        })),
      ),
  ],
  ["straggler_stream_batches_total", "counter", "Micro-batches the stream has run.", (s) => per(s, (m) => m.batches)],
  [
    "straggler_stream_input_rows_total",
    "counter",
    "Rows the stream's micro-batches read.",
    (s) => per(s, (m) => m.inputRows),
  ],
  [
    "straggler_dropped_pairs_total",
    "counter",
    "(event, window) pairs dropped by the watermark (numRowsDroppedByWatermark).",
    (s) => per(s, (m) => m.droppedPairs),
  ],
  [
    "straggler_watermark_seconds",
    "gauge",
    "The checkpoint's watermark, seconds since the epoch.",
    (s) => per(s, (m) => m.watermarkSeconds),
  ],
  [
    "straggler_max_event_time_seconds",
    "gauge",
    "The checkpoint's max event time, seconds since the epoch.",
    (s) => per(s, (m) => m.maxEventTimeSeconds),
  ],
  [
    "straggler_watermark_lag_seconds",
    "gauge",
    "Wall clock minus the watermark, seconds.",
    (s) => per(s, (m) => lag(s, m.watermarkSeconds)),
  ],
  [
    "straggler_max_event_time_lag_seconds",
    "gauge",
    "Wall clock minus the max event time, seconds.",
    (s) => per(s, (m) => lag(s, m.maxEventTimeSeconds)),
  ],
  [
    "straggler_open_windows",
    "gauge",
    "Windows still open (the watermark has not passed their end).",
    (s) => per(s, (m) => m.openWindows),
  ],
  [
    "straggler_backlog_rows",
    "gauge",
    "Rows in bronze past the checkpoint: what the stream still has to read.",
    (s) => per(s, (m) => m.backlogRows),
  ],
  [
    "straggler_correction_runs_total",
    "counter",
    "Finished correction runs by status (succeeded, failed, abandoned).",
    (s) =>
      s.pipelines.flatMap((m) =>
        Object.entries(m.correctionRunsByStatus).map(([status, value]) => ({
          labels: { pipeline: m.pipeline, status },
          value,
        })),
      ),
  ],
  [
    "straggler_correction_runs_running",
    "gauge",
    "Correction runs now running (0 or 1: one run per pipeline at a time).",
    (s) => per(s, (m) => m.correctionRunsRunning),
  ],
  [
    "straggler_correction_backlog_windows",
    "gauge",
    "(key, window)s awaiting correction: late rows landed in final windows, recomputed by the next correction run.",
    (s) => per(s, (m) => m.correctionBacklogWindows),
  ],
  [
    "straggler_correction_windows_changed_total",
    "counter",
    "Windows changed by correction runs.",
    (s) => per(s, (m) => m.windowsChanged),
  ],
  ["straggler_alert_firing", "gauge", "1 while the alert fires, else 0.", (s) => s.firing],
  [
    "straggler_pipeline_held",
    "gauge",
    "1 while the pipeline is held (straggler.window_results serves what it served when the hold began), else 0.",
    (s) => s.held,
  ],
  [
    "straggler_pipeline_owned",
    "gauge",
    "1 while a replica owns the pipeline (its stream runs), else 0.",
    (s) => s.owned,
  ],
  [
    "straggler_replica_owned_pipelines",
    "gauge",
    "Pipelines each live replica owns, by replica id.",
    (s) => s.ownedByReplica,
  ],
  [
    "straggler_reconcile_mismatched_windows",
    "gauge",
    "Final windows reconcile runs found differing from bronze that no correction run has recomputed yet.",
    (s) => s.reconcileMismatched,
  ],
  [
    "straggler_watermark_holder",
    "gauge",
    "1 for the input that holds the pipeline's watermark (the one watermark.policy chose after the last batch).",
    (s) => s.holders.holder,
  ],
  [
    "straggler_watermark_holder_since_seconds",
    "gauge",
    "Since when the holding input has held the watermark (start of its first batch of the streak), seconds since the epoch.",
    (s) => s.holders.since,
  ],
  [
    "straggler_watermark_holder_behind_seconds",
    "gauge",
    "How far the holder's watermark is behind (policy min) or ahead of (max) the nearest other non-idle input's, seconds.",
    (s) => s.holders.behind,
  ],
  [
    "straggler_input_idle",
    "gauge",
    "1 while the input is idle (silent for watermark.idleTimeout, left out of the watermark), else 0.",
    (s) => s.holders.idle,
  ],
  [
    "straggler_log_offset",
    "gauge",
    "A log source's last offset landed in bronze, by log and partition (NATS: the stream sequence; partition * is the stream's position).",
    (s) => s.logOffsets,
  ],
];

function per(s: Snapshot, value: (m: PipelineMetrics) => number | null): Row[] {
  return s.pipelines.flatMap((m) => {
    const v = value(m);
    return v === null ? [] : [{ labels: { pipeline: m.pipeline }, value: v }];
  });
}

const lag = (s: Snapshot, at: number | null) => (at === null ? null : s.now - at);

/** The batch duration histogram, built from the recorded batches' durations (prom-client's Histogram can only observe). */
export function batchDurationHistogram(snapshot: () => Snapshot) {
  const name = "straggler_stream_batch_duration_seconds";
  return {
    name,
    get: async () => ({
      name,
      type: "histogram",
      help: "Duration of the stream's micro-batches, seconds.",
      aggregator: "sum",
      values: snapshot().pipelines.flatMap((m) => [
        ...BATCH_DURATION_BUCKETS_S.map((le, i) => ({
          metricName: `${name}_bucket`,
          labels: { pipeline: m.pipeline, le },
          value: m.durationBuckets[i]!,
        })),
        { metricName: `${name}_bucket`, labels: { pipeline: m.pipeline, le: "+Inf" }, value: m.batches },
        { metricName: `${name}_sum`, labels: { pipeline: m.pipeline }, value: m.durationSumSeconds },
        { metricName: `${name}_count`, labels: { pipeline: m.pipeline }, value: m.batches },
      ]),
    }),
  };
}
