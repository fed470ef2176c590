/**
 * Prometheus metrics (`GET /metrics`, prom-client). What lives in the database
 * (ledger, stream progress, checkpoint, backlog, corrections, alert states) is read
 * at scrape time, so every process and every restart reports the same values;
 * HTTP requests are counted in this process. Names follow Prometheus conventions:
 * prefix `straggler_`, counters end in `_total`, durations and instants are seconds
 * (`promtool check metrics` passes). A counter never goes down: what can (rows now accepted
 * or quarantined, runs now running) is a gauge; archived rows still count.
 * The README's "Metrics and alerts" lists them.
 */
import type { NextFunction, Request, Response } from "express";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Queryable } from "../db/pool.js";
import { readAlertStates } from "../db/sql/observe/alertStates.js";
import { readOpenHolds } from "../db/sql/lifecycle/holds.js";
import { readLogOffsetRows } from "../db/sql/ingest/logOffsets.js";
import { readHolderRows, type HolderRows } from "./holderMetrics.js";
import { countOpenMismatches } from "../db/sql/reconcile/mismatches.js";
import { listLiveReplicas, readPipelineOwners } from "../db/sql/lifecycle/pipelineLeases.js";
import {
  BATCH_DURATION_BUCKETS_S,
  readPipelineMetrics,
  type PipelineMetrics,
} from "../db/sql/observe/readPipelineMetrics.js";
import { configuredAlerts } from "./alerts.js";

type Labels = Record<string, string>;
type Row = { labels: Labels; value: number };

/** A scrape's figures, read once and shared by every metric's collect callback. */
interface Snapshot {
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
const FROM_DATABASE: [string, "counter" | "gauge", string, (s: Snapshot) => Row[]][] = [
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
function batchDurationHistogram(snapshot: () => Snapshot) {
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

export interface Metrics {
  registry: Registry;
  /** Express middleware counting requests by method, route and status, with their latency. */
  countRequests(req: Request, res: Response, next: NextFunction): void;
  /** Reads the database figures and renders every metric (Prometheus text format 0.0.4). */
  scrape(client: Queryable): Promise<string>;
}

/** Default metrics left out: gauges whose `_total` names say counter. */
const NAMES_LIKE_COUNTERS = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
];

/** A registry for `pipelines`, with the process's default metrics (`process_*`, `nodejs_*`, but NAMES_LIKE_COUNTERS). */
export function createMetrics(pipelines: PipelineConfig[]): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // prom-client's totals of the active handles, requests and resources are gauges named like counters
  // (promtool check metrics refuses them); their by-type gauges (nodejs_active_handles, ...) stay: sum them.
  for (const name of NAMES_LIKE_COUNTERS) registry.removeSingleMetric(name);
  let snapshot: Snapshot = {
    pipelines: [],
    firing: [],
    held: [],
    owned: [],
    ownedByReplica: [],
    logOffsets: [],
    reconcileMismatched: [],
    holders: { holder: [], since: [], behind: [], idle: [] },
    now: 0,
  };
  for (const [name, type, help, rows] of FROM_DATABASE) {
    const Kind = type === "counter" ? Counter : Gauge;
    new Kind({
      name,
      help,
      registers: [registry],
      labelNames: ["pipeline", "reason", "status", "alert", "replica", "log", "partition", "input"],
      collect(this: Counter | Gauge) {
        this.reset();
        for (const r of rows(snapshot)) (this as Gauge).inc(r.labels, r.value);
      },
    });
  }
  registry.registerMetric(batchDurationHistogram(() => snapshot) as never);
  const labelNames = ["method", "route", "status"] as const;
  const requests = new Counter({
    name: "straggler_http_requests_total",
    help: "HTTP requests answered, by method, route and status.",
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "straggler_http_request_duration_seconds",
    help: "HTTP request latency, seconds, by method, route and status.",
    labelNames,
    registers: [registry],
  });
  const names = pipelines.map((pipeline) => pipeline.name);
  return {
    registry,
    countRequests(req, res, next) {
      const end = latency.startTimer();
      res.on("finish", () => {
        const labels = {
          method: req.method,
          route: req.route ? `${req.baseUrl}${String(req.route.path)}` : "unmatched",
          status: String(res.statusCode),
        };
        requests.inc(labels);
        end(labels);
      });
      next();
    },
    async scrape(client) {
      const [figures, states, holds, owners, replicas, offsets, mismatched, holders] = await Promise.all([
        readPipelineMetrics(client, names),
        readAlertStates(client, names),
        readOpenHolds(client, names),
        readPipelineOwners(client, names),
        listLiveReplicas(client),
        readLogOffsetRows(client, names),
        countOpenMismatches(client, names),
        readHolderRows(client, pipelines),
      ]);
      const firing = pipelines.flatMap((pipeline) =>
        configuredAlerts(pipeline).map((alert) => ({
          labels: { pipeline: pipeline.name, alert },
          value: states.some((s) => s.pipeline === pipeline.name && s.alert === alert && s.state === "firing") ? 1 : 0,
        })),
      );
      const held = names.map((pipeline) => ({
        labels: { pipeline },
        value: holds.some((h) => h.pipeline === pipeline) ? 1 : 0,
      }));
      const owned = names.map((pipeline) => ({ labels: { pipeline }, value: owners.get(pipeline) ? 1 : 0 }));
      const ownedByReplica = replicas.map((replica) => ({
        labels: { replica },
        value: names.filter((n) => owners.get(n) === replica).length,
      }));
      const logOffsets = offsets.map((o) => ({
        labels: { pipeline: o.pipeline, log: o.log, partition: o.partition },
        value: o.lastOffset,
      }));
      const reconcileMismatched = [...mismatched].map(([pipeline, value]) => ({ labels: { pipeline }, value }));
      snapshot = {
        pipelines: figures,
        firing,
        held,
        owned,
        ownedByReplica,
        logOffsets,
        reconcileMismatched,
        holders,
        now: Date.now() / 1000,
      };
      return registry.metrics();
    },
  };
}
