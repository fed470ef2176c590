/**
 * The pipeline pages as HTML: `/ui` (every pipeline with its state) and
 * `/ui/pipelines/{pipeline}` (charts over the recent batches, the lateness
 * histogram (loaded after the page: latenessSection.ts), alerts, windows, correction runs, the recompute form). Tables
 * are rendered here; the charts are drawn in the browser (`assets/page.js`,
 * uPlot) from the JSON the page carries in `<script id="page-data">`.
 */
import { declaredInputs, watermarkSettingsOf, windowSpecOf, type PipelineConfig } from "../config/pipelines.js";
import { DEFAULT_INPUT } from "../core/watermark.js";
import { isoToUs } from "../core/instants.js";
import type { CheckpointInput } from "../db/sql/stream/readCheckpoint.js";
import { describeCalendar } from "../core/windows.js";
import { shortDuration } from "../observe/latenessText.js";
import type { BatchSeries, PipelineOverview, readCorrections, readWindows, WindowFilter } from "./data.js";
import { CHANGES_SHOWN, WINDOWS_PER_PAGE } from "./data.js";
import { count, html, jsonForScript, layout, stat, type Html } from "./html.js";
import { latenessPlaceholder } from "./latenessSection.js";

const pipelineHref = (name: string) => `/ui/pipelines/${encodeURIComponent(name)}`;
const keyText = (key: string | null) => (key === null ? "(null)" : key);
const percent = (share: number) => `${(share * 100).toFixed(3)} %`;

type Tone = "idle" | "busy" | "bad" | "good";
const TONE_RANK: Record<Tone, number> = { good: 0, idle: 1, busy: 2, bad: 3 };

/** How long a stream may go without a batch while rows wait before it is called stalled: ten trigger intervals, at least a minute. */
export const stallAfterMs = (pipeline: PipelineConfig) => Math.max(60_000, 10 * pipeline.trigger.interval);

/** Microseconds of an ISO instant, or null. */
const usOf = (iso: string | null): bigint | null => (iso === null ? null : isoToUs(iso));

/**
 * The input holding the pipeline's watermark back, when one is quiet: with the `min` policy and
 * two inputs or more, the input (not idle by `watermark.idleTimeout`) whose watermark is the
 * pipeline's, when it last sent (ingestion time; its max event time when that is unknown) more
 * than the watermark delay before the input that sent last. A feed that is behind in event time
 * but keeps sending holds the watermark by design and is not named.
 * @returns the input and since when it is quiet (ISO), or null
 */
export function watermarkHolder(o: PipelineOverview, pipeline: PipelineConfig): { input: string; quietSince: string; watermark: string } | null {
  const c = o.status.checkpoint;
  const settings = watermarkSettingsOf(pipeline);
  if (!c || c.watermark === null || settings.policy !== "min" || c.inputs.length < 2) return null;
  const sent = (i: CheckpointInput) => i.lastIngestionTime ?? i.maxEventTime;
  const clock = c.inputs.reduce<bigint | null>((m, i) => { const u = usOf(i.lastIngestionTime); return u !== null && (m === null || u > m) ? u : m; }, null);
  const idle = (i: CheckpointInput) => {
    const last = usOf(i.lastIngestionTime);
    return settings.idleTimeoutMs !== undefined && clock !== null && last !== null && clock - last >= BigInt(settings.idleTimeoutMs) * 1000n;
  };
  const holder = c.inputs.find((i) => i.watermark !== null && !idle(i) && usOf(i.watermark) === usOf(c.watermark));
  if (!holder) return null;
  const latest = c.inputs.reduce<bigint | null>((m, i) => { const u = usOf(sent(i)); return u !== null && (m === null || u > m) ? u : m; }, null);
  const since = usOf(sent(holder));
  if (latest === null || since === null || latest - since <= BigInt(settings.delayMs) * 1000n) return null;
  return { input: holder.input, quietSince: sent(holder)!, watermark: c.watermark };
}

/**
 * A pipeline's state in a few words, each part saying what holds it (README "The pipeline page"):
 * refused (for its time zone or a changed policy; alone), held (since when, why), the alerts
 * firing; then the stream: not started, stalled (rows waiting and no batch for `stallAfterMs`),
 * catching up, held by a quiet input (`watermarkHolder`) or up to date; then the windows whose
 * aggregate failed and the windows awaiting correction. Parts are joined with " · "; the tone is
 * the worst part's. A refusal for the calendar window's zone is the one with no changed settings
 * (PolicyCheck in src/guards/policy.ts).
 * @param nowMs the clock the stall is judged on (epoch ms)
 */
export function stateOf(o: PipelineOverview, pipeline: PipelineConfig, nowMs = Date.now()): { label: string; tone: Tone } {
  if (o.policy.state === "refused") return { label: o.policy.changes.length === 0 ? "refused: time zone" : "refused: policy changed", tone: "bad" };
  const parts: { label: string; tone: Tone }[] = [];
  if (o.hold !== null) parts.push({ label: `held since ${o.hold.heldAt} (${o.hold.reason})`, tone: "busy" });
  const firing = o.alerts.filter((a) => a.state === "firing").map((a) => a.alert);
  if (firing.length > 0) parts.push({ label: `firing: ${firing.join(", ")}`, tone: "bad" });
  const s = o.status;
  const lastBatchAt = typeof s.lastProgress?.timestamp === "string" ? Date.parse(s.lastProgress.timestamp) : null;
  if (s.checkpoint === null) parts.push({ label: s.backlogRows > 0 ? "not started (rows waiting)" : "not started", tone: "idle" });
  else if (s.backlogRows > 0 && lastBatchAt !== null && nowMs - lastBatchAt >= stallAfterMs(pipeline)) {
    parts.push({ label: `stalled: ${count(s.backlogRows)} rows waiting, last batch at ${new Date(lastBatchAt).toISOString()}`, tone: "bad" });
  } else if (s.backlogRows > 0) parts.push({ label: "catching up", tone: "busy" });
  else {
    const holder = watermarkHolder(o, pipeline);
    parts.push(holder ? { label: `held by input ${holder.input} (quiet since ${holder.quietSince})`, tone: "busy" } : { label: "up to date", tone: "good" });
  }
  if (s.failedWindows > 0) parts.push({ label: `${count(s.failedWindows)} failed window${s.failedWindows === 1 ? "" : "s"}`, tone: "bad" });
  if (s.windows.awaitingCorrection > 0) parts.push({ label: `${count(s.windows.awaitingCorrection)} awaiting correction`, tone: "busy" });
  const tone = parts.reduce<Tone>((t, p) => (TONE_RANK[p.tone] > TONE_RANK[t] ? p.tone : t), "good");
  return { label: parts.map((p) => p.label).join(" · "), tone };
}

/** `GET /ui`: a table of the pipelines with their state. */
export function listPage(rows: { pipeline: PipelineConfig; overview: PipelineOverview }[]): string {
  const body = html`
<h1>Pipelines</h1>
<table class="grid" id="pipelines">
<thead><tr><th>pipeline</th><th>state</th><th>watermark</th><th>max event time</th><th>lag</th><th class="n">backlog rows</th>
<th class="n">open</th><th class="n">final</th><th class="n">corrected</th><th class="n">awaiting correction</th><th class="n">dropped pairs</th><th class="n">quarantined</th></tr></thead>
<tbody>
${rows.map(({ pipeline, overview: o }) => {
  const state = stateOf(o, pipeline);
  const s = o.status;
  return html`<tr data-pipeline="${pipeline.name}">
<td><a href="${pipelineHref(pipeline.name)}">${pipeline.name}</a></td>
<td><span class="badge ${state.tone}">${state.label}</span></td>
<td class="t" data-field="watermark">${s.checkpoint?.watermark ?? "-"}</td>
<td class="t" data-field="maxEventTime">${s.checkpoint?.maxEventTime ?? "-"}</td>
<td data-field="lag">${shortDuration(o.watermarkLagMs)}</td>
<td class="n" data-field="backlogRows">${count(s.backlogRows)}</td>
<td class="n" data-field="open">${count(s.windows.open)}</td>
<td class="n" data-field="final">${count(s.windows.final)}</td>
<td class="n" data-field="corrected">${count(s.windows.corrected)}</td>
<td class="n" data-field="awaitingCorrection">${count(s.windows.awaitingCorrection)}</td>
<td class="n" data-field="numRowsDroppedByWatermark">${count(s.numRowsDroppedByWatermark)}</td>
<td class="n" data-field="quarantined">${count(s.ledger.quarantined)}</td>
</tr>`;
})}
</tbody>
</table>
<p class="note">Read-only. Each pipeline's page has its charts, windows and correction runs; running a correction there needs the API token.
The same numbers as JSON: <a href="/pipelines">GET /pipelines</a>; the API: <a href="/openapi.json">/openapi.json</a>.</p>`;
  return layout("Pipelines", body);
}

/** Everything the pipeline page shows. */
export interface PipelinePageInput {
  pipeline: PipelineConfig;
  overview: PipelineOverview;
  batches: BatchSeries;
  windows: Awaited<ReturnType<typeof readWindows>>;
  filter: WindowFilter;
  /** The query string of the page's other settings (`batches`), kept by the filter's links. */
  batchesShown: number;
  corrections: Awaited<ReturnType<typeof readCorrections>>;
}

/** An alert's value in its unit: a share as a percentage, seconds, rows, or a correction run id. */
function alertValue(a: PipelineOverview["alerts"][number]): string {
  if (a.value === null) return "-";
  switch (a.alert) {
    case "drop_share":
    case "quarantine_share":
      return percent(a.value);
    case "watermark_stalled":
      return shortDuration(a.value * 1000);
    case "backlog":
      return `${count(a.value)} rows`;
    case "correction_failed":
      return `run ${a.value}`;
    default:
      return String(a.value);
  }
}

function alertsSection(o: PipelineOverview): Html {
  if (o.alerts.length === 0) return html`<section id="alerts"><h2>Alerts</h2><p class="note">No alert configured.</p></section>`;
  return html`<section id="alerts"><h2>Alerts</h2>
<table class="grid"><thead><tr><th>alert</th><th>state</th><th>since</th><th class="n">value</th></tr></thead><tbody>
${o.alerts.map((a) => html`<tr data-alert="${a.alert}"><td>${a.alert}</td><td><span class="badge ${a.state === "firing" ? "bad" : "good"}">${a.state}</span></td>
<td class="t">${a.since ?? "not judged yet"}</td><td class="n" title="${a.value === null ? "" : String(a.value)}">${alertValue(a)}</td></tr>`)}
</tbody></table></section>`;
}

function pageLink(base: URLSearchParams, page: number, text: string): Html {
  const q = new URLSearchParams(base);
  q.set("page", String(page));
  return html`<a href="?${q.toString()}#windows" class="pager">${text}</a>`;
}

function windowsSection(input: PipelinePageInput): Html {
  const { windows, filter } = input;
  const base = new URLSearchParams();
  if (filter.key !== undefined) base.set("key", filter.key);
  if (filter.from !== undefined) base.set("from", filter.from);
  if (filter.to !== undefined) base.set("to", filter.to);
  if (filter.status !== undefined) base.set("status", filter.status);
  if (input.batchesShown !== DEFAULT_BATCHES) base.set("batches", String(input.batchesShown));
  const first = (filter.page - 1) * WINDOWS_PER_PAGE;
  const pages = Math.max(1, Math.ceil(windows.total / WINDOWS_PER_PAGE));
  const statusOption = (s: string) => html`<option value="${s}"${filter.status === s ? html` selected` : ""}>${s}</option>`;
  return html`<section id="windows">
<h2>Windows</h2>
<form method="get" action="#windows" class="filter" id="window-filter">
<label>key <input name="key" value="${filter.key ?? ""}" placeholder="any"></label>
<label>from <input name="from" value="${filter.from ?? ""}" placeholder="2020-01-01T00:00:00Z" size="24"></label>
<label>to <input name="to" value="${filter.to ?? ""}" placeholder="2020-01-02T00:00:00Z" size="24"></label>
<label>status <select name="status"><option value="">any</option>${["open", "final", "corrected"].map(statusOption)}</select></label>
${input.batchesShown !== DEFAULT_BATCHES ? html`<input type="hidden" name="batches" value="${String(input.batchesShown)}">` : ""}
<button type="submit">Filter</button> <a href="${pipelineHref(input.pipeline.name)}#windows">clear</a>
</form>
<p class="note" id="window-count">${windows.total === 0 ? "No window matches." : html`Windows <b data-field="windowFirst">${count(first + 1)}</b>–<b data-field="windowLast">${count(first + windows.rows.length)}</b> of <b data-field="windowTotal">${count(windows.total)}</b>`}
${filter.page > 1 ? pageLink(base, filter.page - 1, "← previous") : ""} ${filter.page < pages ? pageLink(base, filter.page + 1, "next →") : ""}
<span class="legend"><span class="badge open">open</span> <span class="badge final">final</span> <span class="badge corrected">corrected</span> <span class="badge awaiting">awaiting correction</span></span></p>
<table class="grid" id="window-table"><thead><tr><th>key</th><th>window start</th><th>window end</th><th>status</th><th class="n">revision</th><th>awaiting correction</th>
<th class="n">events</th><th class="n">sum</th><th class="n">min</th><th class="n">max</th><th class="n">avg</th><th>updated</th></tr></thead><tbody>
${windows.rows.map((w) => html`<tr class="w-${w.status}${w.awaiting_correction ? " w-awaiting" : ""}">
<td>${keyText(w.group_key)}</td><td class="t"><a href="${historyHref(input.pipeline, w.window_start, w.group_key)}" title="every revision of this window (straggler explain)">${w.window_start}</a></td><td class="t">${w.window_end}</td><td><span class="badge ${w.status}">${w.status}</span></td>
<td class="n">${String(w.revision)}</td><td>${w.awaiting_correction ? html`<span class="badge awaiting">yes</span>` : "no"}</td>
<td class="n">${count(w.event_count)}</td><td class="n">${w.value_sum ?? "-"}</td><td class="n">${w.value_min ?? "-"}</td><td class="n">${w.value_max ?? "-"}</td>
<td class="n">${w.value_avg === null ? "-" : Number(w.value_avg).toFixed(2)}</td><td class="t">${w.updated_at}</td></tr>`)}
</tbody></table>
</section>`;
}

/** The window's history (GET /pipelines/{p}/windows/history): its start, and its key where the pipeline has key fields. */
function historyHref(p: PipelineConfig, start: string, key: string | null): string {
  const q = new URLSearchParams({ start });
  if (p.fields.groupKey.length > 0) {
    if (key === null) q.set("nullKey", "true");
    else q.set("key", key);
  }
  return `/pipelines/${encodeURIComponent(p.name)}/windows/history?${q.toString()}`;
}

function aggregateText(n: number | null, sum: string | null): string {
  return n === null ? "-" : `${count(n)} events, sum ${sum ?? "-"}`;
}

function correctionsSection(input: PipelinePageInput): Html {
  const runs = input.corrections;
  return html`<section id="corrections">
<h2>Correction runs <small>latest first</small></h2>
${runs.length === 0 ? html`<p class="note">No correction run yet.</p>` : html`
<table class="grid" id="correction-runs"><thead><tr><th class="n">run</th><th>trigger</th><th>status</th><th>range</th><th>started</th><th class="n">duration</th>
<th class="n">examined</th><th class="n">changed</th><th class="n">events recovered</th></tr></thead><tbody>
${runs.map(({ run }) => html`<tr data-run="${String(run.run_id)}"><td class="n">${String(run.run_id)}</td><td>${run.trigger}</td>
<td><span class="badge ${run.status === "succeeded" ? "good" : run.status === "failed" ? "bad" : "idle"}">${run.status}</span>${run.error ? html` <span class="error">${run.error}</span>` : ""}</td>
<td class="t">${run.range_start ? `${run.range_start} – ${run.range_end}` : "awaiting windows only"}${run.group_keys ? ` (keys ${run.group_keys.join(", ")})` : ""}</td>
<td class="t">${run.started_at}</td><td class="n">${run.duration_ms === null ? "-" : `${count(run.duration_ms)} ms`}</td>
<td class="n">${run.windows_examined === null ? "-" : count(run.windows_examined)}</td><td class="n">${run.windows_changed === null ? "-" : count(run.windows_changed)}</td>
<td class="n">${run.events_recovered === null ? "-" : count(run.events_recovered)}</td></tr>`)}
</tbody></table>
${runs.filter((r) => r.changeCount > 0).map(({ run, changes, changeCount }) => html`<details class="changes" data-run="${String(run.run_id)}">
<summary>Run ${String(run.run_id)}: ${count(changeCount)} window${changeCount === 1 ? "" : "s"} changed${changeCount > CHANGES_SHOWN ? ` (first ${CHANGES_SHOWN} shown; all: GET /pipelines/${input.pipeline.name}/corrections/${run.run_id})` : ""}</summary>
<table class="grid"><thead><tr><th>key</th><th>window start</th><th>revision</th><th>before</th><th>after</th><th class="n">late events</th></tr></thead><tbody>
${changes.map((c) => html`<tr><td>${keyText(c.group_key)}</td><td class="t">${c.window_start}</td><td>${c.revision_before === null ? "new" : String(c.revision_before)} → ${String(c.revision_after)}</td>
<td>${aggregateText(c.count_before, c.sum_before)}</td><td>${aggregateText(c.count_after, c.sum_after)}</td><td class="n">${count(c.late_event_count)}</td></tr>`)}
</tbody></table></details>`)}`}
</section>`;
}

function actionsSection(input: PipelinePageInput): Html {
  const name = input.pipeline.name;
  const held = input.overview.hold !== null;
  return html`<section id="actions">
<h2>Actions <small>need the API token (kept in this tab only)</small></h2>
<form id="recompute" class="actions" data-pipeline="${name}">
<div class="filter"><label>token <input type="password" name="token" id="token" autocomplete="off" placeholder="STRAGGLER_API_TOKEN" size="30"></label></div>
<div class="filter">
<label>from <input name="from" placeholder="optional" size="22"></label>
<label>to <input name="to" placeholder="optional" size="22"></label>
<label>keys <input name="keys" placeholder="optional, comma-separated" size="22"></label>
<button type="submit" id="recompute-button">Recompute</button>
</div>
<div class="filter">
<label>reason <input name="reason" id="hold-reason" placeholder="why the results are held" size="40"${held ? html` disabled` : ""}></label>
<button type="button" id="hold-button" data-action="hold"${held ? html` disabled` : ""}>Hold</button>
<button type="button" id="release-button" data-action="release"${held ? "" : html` disabled`}>Release</button>
</div>
</form>
<p class="note">Recompute runs a correction: every window awaiting correction, plus every final window in [from, to) when both are given (POST /pipelines/${name}/recompute).
Hold keeps the published windows as they are while landing, the stream and corrections go on; Release publishes the live results at once (POST /pipelines/${name}/hold, /release).</p>
<pre id="action-answer" hidden></pre>
</section>`;
}

/**
 * Each input's watermark (docs/DESIGN.md "Several inputs"), for a pipeline with more than its
 * default input: its delay, watermark, max event time, when it last sent, and whether it holds
 * the pipeline's watermark (the `min` policy's choice), is quiet doing so, or is idle. Inputs
 * declared that sent nothing yet are listed too.
 */
function inputsSection(pipeline: PipelineConfig, o: PipelineOverview): Html {
  const declared = declaredInputs(pipeline);
  const seen = o.status.checkpoint?.inputs ?? [];
  if (declared.length < 2 && seen.every((i) => i.input === DEFAULT_INPUT)) return html``;
  const settings = watermarkSettingsOf(pipeline);
  const holder = watermarkHolder(o, pipeline);
  const watermark = usOf(o.status.checkpoint?.watermark ?? null);
  const names = [...declared, ...seen.map((i) => i.input).filter((n) => !declared.includes(n))];
  const clock = seen.reduce<bigint | null>((m, i) => { const u = usOf(i.lastIngestionTime); return u !== null && (m === null || u > m) ? u : m; }, null);
  const role = (i: CheckpointInput | undefined): string => {
    if (!i || i.watermark === null) return "no row yet: not in the choice";
    const last = usOf(i.lastIngestionTime);
    if (settings.idleTimeoutMs !== undefined && clock !== null && last !== null && clock - last >= BigInt(settings.idleTimeoutMs) * 1000n) return "idle: left out of the choice";
    if (holder?.input === i.input) return `holds the watermark (quiet since ${holder.quietSince})`;
    if (watermark !== null && usOf(i.watermark) === watermark) return "holds the watermark";
    return "";
  };
  return html`<section id="inputs"><h2>Inputs <small>the watermark is the ${settings.policy} of theirs${settings.idleTimeoutMs !== undefined ? `, idle ones left out after ${shortDuration(settings.idleTimeoutMs)}` : ""}</small></h2>
<table class="grid" id="input-table"><thead><tr><th>input</th><th>delay</th><th>watermark</th><th>max event time</th><th>last sent</th><th>role</th></tr></thead><tbody>
${names.map((name) => {
  const i = seen.find((x) => x.input === name);
  return html`<tr data-input="${name}"><td>${name}</td><td>${shortDuration(settings.delays.get(name) ?? settings.delayMs)}</td>
<td class="t" data-field="inputWatermark">${i?.watermark ?? "-"}</td><td class="t">${i?.maxEventTime ?? "-"}</td><td class="t">${i?.lastIngestionTime ?? "-"}</td>
<td data-field="inputRole">${role(i)}</td></tr>`;
})}
</tbody></table></section>`;
}

/** Recent batches the charts show unless `?batches=` says otherwise. */
export const DEFAULT_BATCHES = 500;

/** `GET /ui/pipelines/{pipeline}`. */
export function pipelinePage(input: PipelinePageInput): string {
  const { pipeline, overview: o, batches } = input;
  const s = o.status;
  const state = stateOf(o, pipeline);
  const chartData = { batches };
  const body = html`
<h1>${pipeline.name} <span class="badge ${state.tone}" id="state">${state.label}</span></h1>
<p class="note">${windowShape(pipeline)}, watermark delay ${shortDuration(pipeline.watermark.delay)}.
JSON: <a href="/pipelines/${pipeline.name}/progress">progress</a> · <a href="/pipelines/${pipeline.name}/windows">windows</a> · <a href="/pipelines/${pipeline.name}/corrections">corrections</a> · <a href="/pipelines/${pipeline.name}/quarantine">quarantine</a></p>
<div class="stats" id="overview">
${stat("watermark", "watermark", s.checkpoint?.watermark ?? "-", undefined, true)}
${stat("max event time", "maxEventTime", s.checkpoint?.maxEventTime ?? "-", undefined, true)}
${stat("watermark lag", "lag", shortDuration(o.watermarkLagMs))}
${stat("last batch", "batchId", s.checkpoint ? count(s.checkpoint.batchId) : "-")}
${stat("backlog rows", "backlogRows", count(s.backlogRows))}
${stat("rows landed", "landed", count(s.ledger.landed))}
${stat("accepted", "accepted", count(s.ledger.accepted))}
${stat("quarantined", "quarantined", count(s.ledger.quarantined), Object.entries(s.ledger.quarantinedByReason).map(([r, n]) => `${r} ${n}`).join(", "))}
${stat("dropped pairs", "numRowsDroppedByWatermark", count(s.numRowsDroppedByWatermark), "numRowsDroppedByWatermark: (event, window) pairs the watermark dropped")}
${stat("windows open", "windowsOpen", count(s.windows.open))}
${stat("final", "windowsFinal", count(s.windows.final))}
${stat("corrected", "windowsCorrected", count(s.windows.corrected))}
${stat("awaiting correction", "awaitingCorrection", count(s.windows.awaitingCorrection))}
${stat("last reconcile", "lastReconcile", reconcileText(o.lastReconcile), o.lastReconcile ? `run ${o.lastReconcile.runId} (${o.lastReconcile.trigger}), finished ${o.lastReconcile.finishedAt ?? "-"}` : "correction.reconcile runs none yet")}
</div>
${o.policy.state === "refused" ? html`<pre class="error" id="policy-refusal">${o.policy.message}</pre>` : ""}
${o.hold ? html`<p class="held" id="hold">Held since <span class="t">${o.hold.heldAt}</span>${o.hold.rule ? ` by the rule ${o.hold.rule}${o.hold.batchId !== null ? ` (batch ${o.hold.batchId})` : ""}` : " by hand"}: <b data-field="holdReason">${o.hold.reason}</b>. The windows below are the ones published when the hold began; Release publishes the live results.</p>` : ""}
${inputsSection(pipeline, o)}
${alertsSection(o)}
<section id="batches">
<h2>Recent batches <small>the last ${batches.batchId.length === 1 ? "micro-batch" : `${count(batches.batchId.length)} micro-batches`} (<a href="?batches=${String(Math.min(10_000, input.batchesShown * 4))}">more</a>)</small></h2>
${batches.batchId.length === 0 ? html`<p class="note">No micro-batch yet.</p>` : html`<div class="charts">
<div class="chart" data-chart="rates" aria-label="input and processing rate"></div>
<div class="chart" data-chart="duration" aria-label="batch duration"></div>
<div class="chart span" data-chart="eventTime" aria-label="max event time and watermark"></div>
<div class="chart" data-chart="dropped" aria-label="dropped pairs"></div>
<div class="chart" data-chart="quarantined" aria-label="quarantined rows by reason"></div>
</div>`}
</section>
${latenessPlaceholder(pipeline.name)}
${windowsSection(input)}
${correctionsSection(input)}
${actionsSection(input)}
<script type="application/json" id="page-data">${jsonForScript(chartData)}</script>`;
  return layout(pipeline.name, body, ["/ui/assets/uPlot.iife.min.js", "/ui/assets/page.js"]);
}

/** The last reconcile run in a few words: `none`, `failed`, or the windows it found mismatched of those it checked. */
function reconcileText(r: PipelineOverview["lastReconcile"]): string {
  if (r === null) return "none";
  if (r.status === "failed") return "failed";
  return `${count(r.windowsMismatched ?? 0)} of ${count(r.windowsChecked ?? 0)} mismatched`;
}

/** A page for a request the pages cannot answer (a bad filter, an unknown pipeline). */
export function errorPage(status: number, message: string): string {
  return layout(`Error ${status}`, html`<h1>Error ${String(status)}</h1><p class="error" id="error-message">${message}</p><p><a href="/ui">All pipelines</a></p>`);
}

/** The window shape in words: `tumbling windows of 1h`, `session windows with a gap of 30m`. */
function windowShape(pipeline: PipelineConfig): string {
  if (pipeline.window.type === "session") return `session windows with a gap of ${shortDuration(pipeline.window.gap)}`;
  const spec = windowSpecOf(pipeline);
  return `${pipeline.window.type} windows of ${spec.calendar !== undefined ? describeCalendar(spec) : `${shortDuration(spec.sizeMs)}${spec.slideMs !== spec.sizeMs ? ` every ${shortDuration(spec.slideMs)}` : ""}`}`;
}
