/**
 * Prometheus metrics (`GET /metrics`, prom-client). What lives in the database
 * (ledger, stream progress, checkpoint, backlog, corrections, alert states) is read
 * at scrape time, so every process and every restart reports the same values;
 * HTTP requests are counted in this process. Names follow Prometheus conventions:
 * prefix `straggler_`, counters end in `_total`, durations and instants are seconds
 * (`promtool check metrics` passes). A counter never goes down: what can (rows now accepted
 * or quarantined, runs now running) is a gauge; archived rows still count.
 * The README's "Metrics and alerts" lists them; src/observe/metricCatalogue.ts defines those
 * read from the database.
 */
import type { NextFunction, Request, Response } from "express";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Queryable } from "../db/pool.js";
import { readAlertStates } from "../db/sql/observe/alertStates.js";
import { readOpenHolds } from "../db/sql/lifecycle/holds.js";
import { readLogOffsetRows } from "../db/sql/ingest/logOffsets.js";
import { readHolderRows } from "./holderMetrics.js";
import { countOpenMismatches } from "../db/sql/reconcile/mismatches.js";
import { listLiveReplicas, readPipelineOwners } from "../db/sql/lifecycle/pipelineLeases.js";
import { readPipelineMetrics } from "../db/sql/observe/readPipelineMetrics.js";
import { configuredAlerts } from "./alerts.js";
import { batchDurationHistogram, FROM_DATABASE, type Snapshot } from "./metricCatalogue.js";

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
