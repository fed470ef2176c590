/**
 * Alerts (the pipeline's `alerts:` block, src/config/pipelineSchema.ts): each is judged on
 * the database (src/db/sql/observe/readAlertFacts.ts), and its state — ok or firing, since
 * when, the value it was judged on — is recorded in `straggler.alert_states` when it
 * changes, so `status`, `GET /pipelines` and `/metrics` of every process agree.
 * Each change is POSTed to the webhook when one is configured.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool, Queryable } from "../db/pool.js";
import { readAlertStates, recordAlertState, type AlertState } from "../db/sql/observe/alertStates.js";
import { readAlertFacts, type AlertFacts } from "../db/sql/observe/readAlertFacts.js";
import { countOpenMismatches } from "../db/sql/reconcile/mismatches.js";
import { judgeDrift, reconcileDriftOn, type DriftFacts } from "./reconcileDrift.js";
import type { Logger } from "../log.js";
import { startLoop } from "../loop.js";
import { sendAlertWebhook, type AlertChange } from "./webhook.js";

/** The alert names, as they appear in `straggler_alert_firing{alert=…}` and the API. */
export type AlertName =
  "drop_share" | "quarantine_share" | "watermark_stalled" | "backlog" | "correction_failed" | "reconcile_drift";

/** One alert's judgement: `value` in the alert's unit (a fraction, seconds, rows or a run id). */
interface Judgement {
  alert: AlertName;
  firing: boolean;
  value: number | null;
  threshold: number | null;
  message: string;
}

const ratio = (part: number, whole: number) => (whole === 0 ? 0 : part / whole);
const pct = (v: number) => `${(v * 100).toFixed(2)} %`;

/** The alerts `pipeline` configures, judged on `facts`, in a fixed order. */
export function judgeAlerts(pipeline: PipelineConfig, facts: AlertFacts & DriftFacts): Judgement[] {
  const a = pipeline.alerts;
  const out: Judgement[] = [];
  if (a.dropShare) {
    const v = ratio(facts.droppedPairs, facts.dropInputRows);
    out.push({
      alert: "drop_share",
      firing: v > a.dropShare.above,
      value: v,
      threshold: a.dropShare.above,
      message: `${pct(v)} of input rows' pairs dropped by the watermark over the last ${a.dropShare.batches} batches (alert above ${pct(a.dropShare.above)})`,
    });
  }
  if (a.quarantineShare) {
    const v = ratio(facts.quarantinedRows, facts.quarantineRows);
    const what = a.quarantineShare.reason ? `quarantined as ${a.quarantineShare.reason}` : "quarantined";
    out.push({
      alert: "quarantine_share",
      firing: v > a.quarantineShare.above,
      value: v,
      threshold: a.quarantineShare.above,
      message: `${pct(v)} of rows ${what} over the last ${a.quarantineShare.batches} batches (alert above ${pct(a.quarantineShare.above)})`,
    });
  }
  if (a.watermarkStalled) {
    const limit = a.watermarkStalled.for / 1000;
    out.push({
      alert: "watermark_stalled",
      firing: facts.stalledSeconds >= limit,
      value: facts.stalledSeconds,
      threshold: limit,
      message: `watermark unmoved for ${Math.round(facts.stalledSeconds)} s while rows land (alert at ${limit} s)`,
    });
  }
  if (a.backlog) {
    out.push({
      alert: "backlog",
      firing: facts.backlogRows > a.backlog.above,
      value: facts.backlogRows,
      threshold: a.backlog.above,
      message: `${facts.backlogRows} rows wait for the stream (alert above ${a.backlog.above})`,
    });
  }
  if (a.correctionFailed) {
    const run = facts.lastRun;
    const failed = run !== null && run.status !== "succeeded";
    out.push({
      alert: "correction_failed",
      firing: failed,
      value: run?.runId ?? null,
      threshold: null,
      message: run ? `latest correction run ${run.runId} ${run.status}` : "no correction run has finished",
    });
  }
  if (reconcileDriftOn(pipeline)) out.push(judgeDrift(facts.reconcileMismatched ?? 0));
  return out;
}

/**
 * Judges `pipeline`'s alerts now and records the changes; each change goes to the webhook
 * (when configured) without waiting for it.
 * @returns the changes this call recorded
 */
export async function evaluateAlerts(client: Queryable, pipeline: PipelineConfig, log: Logger): Promise<AlertChange[]> {
  const a = pipeline.alerts;
  const facts = {
    ...(await readAlertFacts(
      client,
      pipeline.name,
      a.dropShare?.batches ?? 1,
      a.quarantineShare?.batches ?? 1,
      a.quarantineShare?.reason,
    )),
    reconcileMismatched: reconcileDriftOn(pipeline)
      ? (await countOpenMismatches(client, [pipeline.name])).get(pipeline.name)
      : 0,
  };
  const changes: AlertChange[] = [];
  for (const j of judgeAlerts(pipeline, facts)) {
    const changed = await recordAlertState(client, pipeline.name, j.alert, j.firing ? "firing" : "ok", j.value);
    if (!changed) continue;
    const change = { ...changed, threshold: j.threshold, message: j.message };
    changes.push(change);
    log.info(
      { pipeline: pipeline.name, alert: j.alert, state: change.state, value: j.value },
      `alert ${j.alert} ${change.state}: ${j.message}`,
    );
    if (a.webhook) void sendAlertWebhook(a.webhook, change, log);
  }
  return changes;
}

/** An alert as shown by `status` and `GET /pipelines`: `since` null and state ok until it has been judged. */
export interface AlertView {
  alert: AlertName;
  state: "ok" | "firing";
  since: string | null;
  value: number | null;
}

/** The configured alerts of `pipeline` with their recorded states, in `judgeAlerts` order. */
export async function alertViews(client: Queryable, pipeline: PipelineConfig): Promise<AlertView[]> {
  const recorded = await readAlertStates(client, [pipeline.name]);
  return configuredAlerts(pipeline).map((alert) => {
    const r: AlertState | undefined = recorded.find((s) => s.alert === alert);
    return { alert, state: r?.state ?? "ok", since: r?.since ?? null, value: r?.value ?? null };
  });
}

/** The names of the alerts `pipeline` configures. */
export function configuredAlerts(pipeline: PipelineConfig): AlertName[] {
  const a = pipeline.alerts;
  const on: [AlertName, boolean][] = [
    ["drop_share", a.dropShare !== null],
    ["quarantine_share", a.quarantineShare !== null],
    ["watermark_stalled", a.watermarkStalled !== null],
    ["backlog", a.backlog !== null],
    ["correction_failed", a.correctionFailed],
    ["reconcile_drift", reconcileDriftOn(pipeline)],
  ];
  return on.filter(([, enabled]) => enabled).map(([name]) => name);
}

/** How often the service judges the alerts, ms. */
const ALERT_INTERVAL_MS = 5_000;

export interface AlertScheduleOptions {
  /** Between two rounds, ms (default ALERT_INTERVAL_MS). */
  intervalMs?: number;
  /**
   * Whether this process judges `pipeline` now: with several replicas, only the pipeline's owner
   * (its lease, src/cluster/leases.ts), so each pipeline is judged once per round across them.
   * Default: every pipeline.
   */
  owns?: (pipeline: string) => boolean;
}

/**
 * Judges the alerts of every pipeline this process owns `intervalMs` after the previous round ended (a failed round is
 * logged and the next one runs). Each judgement is logged at debug (`alerts judged`).
 * @returns stop(): waits for a round in progress
 */
export function startAlerts(
  pool: Pool,
  pipelines: PipelineConfig[],
  log: Logger,
  opts: AlertScheduleOptions = {},
): () => Promise<void> {
  const owns = opts.owns ?? (() => true);
  const round = async () => {
    for (const pipeline of pipelines) {
      if (!owns(pipeline.name)) continue;
      await evaluateAlerts(pool, pipeline, log).then(
        (changes) => log.debug({ pipeline: pipeline.name, changes: changes.length }, "alerts judged"),
        (e: unknown) => log.warn({ err: e, pipeline: pipeline.name }, "alerts could not be judged"),
      );
    }
  };
  // Each pipeline's failure is logged on its own: a round never fails as a whole.
  const loop = startLoop(round, {
    intervalMs: opts.intervalMs ?? ALERT_INTERVAL_MS,
    immediate: false,
    unref: true,
    onError: (e) => log.warn({ err: e }, "alerts round failed"),
  });
  return () => loop.stop();
}
