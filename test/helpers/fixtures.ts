/** Paths to the shared datasets and pipeline configs built for tests. */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { pipelineSchema } from "../../src/config/pipelineSchema.js";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { RawRecord } from "../../src/core/admission.js";
import { readRecords } from "../../src/ingest/readers.js";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** The shared datasets folder, beside the repository unless `STRAGGLER_SHARED_DATA` says otherwise. */
export const SHARED_DATA = process.env.STRAGGLER_SHARED_DATA ?? path.resolve(REPO_ROOT, "../shared/data");

export const seedDir = (name: string) => path.join(SHARED_DATA, "seed-examples", name);

/** Builds a validated pipeline config from raw (YAML-shaped) input. */
export function pipeline(raw: Record<string, unknown>): PipelineConfig {
  return pipelineSchema.parse(raw);
}

/**
 * The issues' common pipeline, fed over HTTP: JSON lines with `event_time` (ISO 8601) and
 * `amount`, sum of amount per 10-minute tumbling window, 10-minute delay.
 */
export function postedOrders(name: string): PipelineConfig {
  return pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventTime: "event_time", value: "amount" },
    timestamps: { format: "iso8601" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
  });
}

/**
 * JSON lines of `id`, `t` and `v` (event id, ISO 8601 event time, value): sum of v per 10-minute tumbling window,
 * 10-minute delay, no future-skew check (tests land fixed past times at any wall clock).
 */
export function idOrders(name: string): PipelineConfig {
  return pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { maxFutureSkew: null },
  });
}

/** `text` (one source's bytes, JSON lines unless `format` says otherwise) as the records a landing reads. */
export function recordsOfText(text: string, format: "jsonl" | "csv" = "jsonl"): AsyncIterable<RawRecord> {
  return readRecords(Readable.from([Buffer.from(text)]), format);
}

/** The late-within-delay seed: sum of amount, 10-minute tumbling windows, 10-minute delay, zone-less = UTC. */
export function lateWithinDelay(name = "late-within-delay"): PipelineConfig {
  return pipeline({
    name,
    source: { landingDir: seedDir("late-within-delay"), format: "jsonl" },
    fields: { eventTime: "event_time", value: "amount" },
    timestamps: { format: "iso8601", timeZone: "UTC" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
  });
}

/** The future-outlier seed: count per 10-minute window, 5-minute delay, producer ingestion time, id RawID. */
export function futureOutlier(guarded: boolean, name = guarded ? "future-guarded" : "future-control"): PipelineConfig {
  return pipeline({
    name,
    source: { landingDir: seedDir("future-outlier"), format: "csv" },
    fields: { eventId: "RawID", eventTime: "EventTimestampRaw", ingestionTime: "IngestionTime", value: "Payload" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "5 minutes" },
    admission: { maxFutureSkew: guarded ? "1 hour" : null },
  });
}

/**
 * One YAML list item for the service-process tests (crash soak, database outage):
 * JSONL with id / t / k / v, 1-minute windows, 30-second delay, a fast trigger and
 * small micro-batches so that kills and outages land mid-work. `extraLines` are
 * further settings of the item (e.g. `correction: { lease: 5 seconds }`).
 */
export function servicePipelineYaml(name: string, landingDir: string, extraLines: string[] = []): string {
  return `
  - name: ${name}
    source: { landingDir: ${JSON.stringify(landingDir)}, format: jsonl }
    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }
    window: { type: tumbling, size: 1 minute }
    watermark: { delay: 30 seconds }
    trigger: { interval: 200 milliseconds, maxRowsPerBatch: 300 }
${extraLines.map((l) => `    ${l}\n`).join("")}`;
}

/** JSONL (`id`, `t`, `k`, `v`) sessions with a 30-minute gap per `k`, watermark delay `delay`. */
export function sessionOrders(name: string, delay: string): PipelineConfig {
  return pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
    window: { type: "session", gap: "30 minutes" },
    watermark: { delay },
    admission: { maxFutureSkew: null },
  });
}

/**
 * A replayable landing folder holding `orders.csv` (`id,event_time,arrived,amount` rows in `csv`),
 * pipeline `name` over it (10-minute tumbling windows, delay 10 minutes, replayed by `arrived`, 1-hour
 * spans) and its config file for the CLI.
 */
export function replayedOrders(
  name: string,
  csv: string,
  tmpPrefix: string,
): { p: PipelineConfig; file: string; config: string } {
  const dir = mkdtempSync(path.join(tmpdir(), tmpPrefix));
  const landing = path.join(dir, "landing");
  mkdirSync(landing);
  const file = path.join(landing, "orders.csv");
  writeFileSync(file, csv);
  const raw = {
    name,
    source: { landingDir: landing, format: "csv" },
    fields: { eventId: "id", eventTime: "event_time", value: "amount" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    replay: { arrivalField: "arrived", batchSpan: "1 hour" },
  };
  const config = path.join(dir, "pipelines.json");
  writeFileSync(config, JSON.stringify({ pipelines: [raw] }));
  return { p: pipeline(raw), file, config };
}
