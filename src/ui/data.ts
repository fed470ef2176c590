/**
 * What the pipeline pages show, read with the same functions as the REST API
 * (`pipelineStatus` and `alertViews` as `GET /pipelines`, the public views as
 * `GET /pipelines/{pipeline}/…`), so the numbers on a page are the API's.
 */
import { readLastReconcileRuns, type ReconcileRunRow } from "../db/sql/reconcile/runs.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { isoToUs } from "../core/instants.js";
import type { Pool } from "../db/pool.js";
import { readPipelineTop } from "../db/sql/ingest/bronzeSeqHighWater.js";
import { readCheckpoint } from "../db/sql/stream/readCheckpoint.js";
import { readCorrectionAudit } from "../db/sql/correction/readCorrectionAudit.js";
import { readCorrectionHistory } from "../db/sql/correction/readCorrectionHistory.js";
import { readOpenHold, type Hold } from "../db/sql/lifecycle/holds.js";
import { readMaxEventTimeSoFar } from "../db/sql/stream/readMaxEventTimeSoFar.js";
import { readQuarantineByBatch } from "../db/sql/stream/readQuarantineByBatch.js";
import { readStreamProgress } from "../db/sql/stream/readStreamProgress.js";
import { readWindowPage } from "../db/sql/readmodel/readWindowPage.js";
import { alertViews, type AlertView } from "../observe/alerts.js";
import { latenessAdvice, type LatenessAdvice } from "../observe/latenessAdvice.js";
import { checkPolicy, type PolicyCheck } from "../guards/index.js";
import { pipelineStatus, type PipelineStatus } from "../stream/status.js";

/** A pipeline's state as `GET /pipelines` gives it, with its lag. */
export interface PipelineOverview {
  status: PipelineStatus;
  alerts: AlertView[];
  /** The configured policy against the live results' (as `GET /pipelines`' `policy`). */
  policy: PolicyCheck;
  /** The open hold (as `GET /pipelines`' `hold`); null when the pipeline is not held. */
  hold: Hold | null;
  /** How far the watermark trails the newest event, ms (as `GET /pipelines`' `watermarkLagMs`); null before both exist. */
  watermarkLagMs: number | null;
  /** The last finished continuous-reconcile run (as `GET /pipelines`' `lastReconcile`); null before any. */
  lastReconcile: ReconcileRunRow | null;
}

/** Reads the overview of `pipeline` (see `PipelineOverview`). @throws database errors */
export async function readOverview(pool: Pool, pipeline: PipelineConfig): Promise<PipelineOverview> {
  const [status, alerts, policy, hold, reconciles] = await Promise.all([
    pipelineStatus(pool, pipeline.name),
    alertViews(pool, pipeline),
    checkPolicy(pool, pipeline),
    readOpenHold(pool, pipeline.name),
    readLastReconcileRuns(pool, [pipeline.name]),
  ]);
  const c = status.checkpoint;
  const watermarkLagMs =
    c?.watermark && c.maxEventTime ? Number(isoToUs(c.maxEventTime) - isoToUs(c.watermark)) / 1000 : null;
  return {
    status,
    alerts,
    policy,
    hold: hold ?? null,
    watermarkLagMs,
    lastReconcile: reconciles.get(pipeline.name) ?? null,
  };
}

/** Epoch seconds of an ISO instant (ms kept as fractions), null for null: uPlot's time unit. */
const epochS = (iso: string | null): number | null => (iso === null ? null : Number(isoToUs(iso)) / 1e6);

/**
 * The chart series over the recent batches, oldest first, one entry per batch in every array:
 * rates in rows/s, durations in ms, instants in epoch seconds, counts in rows or (event, window) pairs.
 */
export interface BatchSeries {
  batchId: number[];
  inputRowsPerSecond: (number | null)[];
  processedRowsPerSecond: (number | null)[];
  durationMs: number[];
  /** The newest accepted event time of each batch (`event_time_max`); null for a batch without accepted rows. */
  eventTimeMax: (number | null)[];
  /** The max event time up to each batch (the running max of `event_time_max` over every batch). */
  maxEventTimeSoFar: (number | null)[];
  /** The watermark after each batch (`next_watermark`). */
  watermark: (number | null)[];
  /** `num_rows_dropped_by_watermark`: (event, window) pairs. */
  droppedPairs: number[];
  /** Quarantined rows of each batch by reason. */
  quarantinedByReason: Record<string, number[]>;
}

/**
 * The last `batches` micro-batches of `pipeline` as chart series (see `BatchSeries`).
 * @throws database errors
 */
export async function readBatchSeries(pool: Pool, pipeline: string, batches: number): Promise<BatchSeries> {
  const progress = (await readStreamProgress(pool, pipeline, batches)).reverse();
  const first = progress[0]?.batch_id;
  const [quarantined, soFar] =
    first === undefined
      ? [[], []]
      : await Promise.all([readQuarantineByBatch(pool, pipeline, first), readMaxEventTimeSoFar(pool, pipeline, first)]);
  const maxSoFar = new Map(soFar.map((m) => [m.batchId, epochS(m.maxEventTime)]));
  const index = new Map(progress.map((p, i) => [p.batch_id, i]));
  const quarantinedByReason: Record<string, number[]> = {};
  for (const q of quarantined) {
    const i = index.get(q.batchId);
    if (i === undefined) continue;
    (quarantinedByReason[q.reason] ??= progress.map(() => 0))[i] = q.rows;
  }
  return {
    batchId: progress.map((p) => p.batch_id),
    inputRowsPerSecond: progress.map((p) => p.input_rows_per_second),
    processedRowsPerSecond: progress.map((p) => p.processed_rows_per_second),
    durationMs: progress.map((p) => p.duration_ms),
    eventTimeMax: progress.map((p) => epochS(p.event_time_max)),
    maxEventTimeSoFar: progress.map((p) => maxSoFar.get(p.batch_id) ?? null),
    watermark: progress.map((p) => epochS(p.next_watermark)),
    droppedPairs: progress.map((p) => p.num_rows_dropped_by_watermark),
    quarantinedByReason,
  };
}

/** The windows table's filter, as the page's query gives it. */
export interface WindowFilter {
  key?: string;
  from?: string;
  to?: string;
  status?: "open" | "final" | "corrected";
  /** 1-based page of `pageSize` windows. */
  page: number;
}

/** Windows per page of the windows table. */
export const WINDOWS_PER_PAGE = 100;

/**
 * One page of the windows table and the number of windows the filter matches. Without a filter the
 * number is the overview's windows by status (the same view, `straggler.window_results`), not counted again.
 * @throws database errors
 */
export function readWindows(pool: Pool, pipeline: string, filter: WindowFilter, overview: PipelineOverview) {
  const { page, ...rest } = filter;
  const w = overview.status.windows;
  const unfiltered =
    rest.key === undefined && rest.from === undefined && rest.to === undefined && rest.status === undefined;
  const total = unfiltered ? w.open + w.final + w.corrected : undefined;
  return readWindowPage(
    pool,
    pipeline,
    { ...rest, limit: WINDOWS_PER_PAGE, offset: (page - 1) * WINDOWS_PER_PAGE },
    total,
  );
}

/** Correction runs shown, and changed windows shown per run. */
const RUNS_SHOWN = 10;
export const CHANGES_SHOWN = 50;

/**
 * The latest correction runs with the windows each changed (the first `CHANGES_SHOWN`, by key then
 * window start) and how many it changed in all. @throws database errors
 */
export async function readCorrections(pool: Pool, pipeline: string) {
  const runs = await readCorrectionHistory(pool, pipeline, RUNS_SHOWN);
  return Promise.all(
    runs.map(async (run) => {
      const changes = await readCorrectionAudit(pool, run.run_id);
      return { run, changes: changes.slice(0, CHANGES_SHOWN), changeCount: changes.length };
    }),
  );
}

/**
 * Lateness reports by pipeline, kept while the stream has not moved and nothing has landed: the
 * report reads every accepted row, and it changes only with a new batch or new rows. Keyed by the
 * checkpoint (batch id and last seq) and the pipeline's highest seq, read after it above the checkpoint's
 * last seq (the rows not streamed yet; a pipeline never streamed has all its rows above 0): two reads, no
 * count of bronze.
 */
export class LatenessCache {
  private readonly reports = new Map<string, { version: string; report: Promise<LatenessAdvice> }>();

  /** The report of `pipeline` (`latenessAdvice` with its defaults) as of now. @throws what `latenessAdvice` throws, database errors */
  async get(pool: Pool, pipeline: PipelineConfig): Promise<LatenessAdvice> {
    const checkpoint = await readCheckpoint(pool, pipeline.name);
    const top = await readPipelineTop(pool, pipeline.name, checkpoint?.lastSeq ?? 0);
    const version = `${checkpoint?.batchId ?? "none"}/${checkpoint?.lastSeq ?? 0}/${top}`;
    const kept = this.reports.get(pipeline.name);
    if (kept?.version === version) return kept.report;
    const report = latenessAdvice(pool, pipeline);
    this.reports.set(pipeline.name, { version, report });
    report.catch(() => {
      if (this.reports.get(pipeline.name)?.report === report) this.reports.delete(pipeline.name);
    });
    return report;
  }
}
