/**
 * The sections of the pipeline page below its tiles (src/ui/pages.ts): inputs, alerts, windows,
 * correction runs, actions. Each renders what the page's reads gave it (src/ui/data.ts); none queries.
 */
import { declaredInputs, watermarkSettingsOf, type PipelineConfig } from "../config/pipelines.js";
import { DEFAULT_INPUT } from "../core/watermark.js";
import type { CheckpointInput } from "../db/sql/stream/readCheckpoint.js";
import { shortDuration } from "../observe/latenessText.js";
import type { PipelineOverview, readCorrections, readWindows, WindowFilter } from "./data.js";
import { CHANGES_SHOWN, WINDOWS_PER_PAGE } from "./data.js";
import { count, html, type Html } from "./html.js";
import { usOf, watermarkHolder } from "./state.js";

/** The pipeline page's path. */
export const pipelineHref = (name: string) => `/ui/pipelines/${encodeURIComponent(name)}`;
const keyText = (key: string | null) => (key === null ? "(null)" : key);
const percent = (share: number) => `${(share * 100).toFixed(3)} %`;

/** Recent batches the charts show unless `?batches=` says otherwise. */
export const DEFAULT_BATCHES = 500;

/** Everything the pipeline page shows. */
export interface PipelinePageInput {
  pipeline: PipelineConfig;
  overview: PipelineOverview;
  /** The recent micro-batches the charts show (at most `batchesShown`; their series are fetched after the page). */
  batchCount: number;
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

export function alertsSection(o: PipelineOverview): Html {
  if (o.alerts.length === 0)
    return html`<section id="alerts"><h2>Alerts</h2><p class="note">No alert configured.</p></section>`;
  return html`<section id="alerts"><h2>Alerts</h2>
<table class="grid"><thead><tr><th>alert</th><th>state</th><th>since</th><th class="n">value</th></tr></thead><tbody>
${o.alerts.map(
  (
    a,
  ) => html`<tr data-alert="${a.alert}"><td>${a.alert}</td><td><span class="badge ${a.state === "firing" ? "bad" : "good"}">${a.state}</span></td>
<td class="t">${a.since ?? "not judged yet"}</td><td class="n" title="${a.value === null ? "" : String(a.value)}">${alertValue(a)}</td></tr>`,
)}
</tbody></table></section>`;
}

function pageLink(base: URLSearchParams, page: number, text: string): Html {
  const q = new URLSearchParams(base);
  q.set("page", String(page));
  return html`<a href="?${q.toString()}#windows" class="pager">${text}</a>`;
}

export function windowsSection(input: PipelinePageInput): Html {
  const { windows, filter } = input;
  const base = new URLSearchParams();
  if (filter.key !== undefined) base.set("key", filter.key);
  if (filter.from !== undefined) base.set("from", filter.from);
  if (filter.to !== undefined) base.set("to", filter.to);
  if (filter.status !== undefined) base.set("status", filter.status);
  if (input.batchesShown !== DEFAULT_BATCHES) base.set("batches", String(input.batchesShown));
  const first = (filter.page - 1) * WINDOWS_PER_PAGE;
  const pages = Math.max(1, Math.ceil(windows.total / WINDOWS_PER_PAGE));
  const statusOption = (s: string) => html`<option value="${s}"${filter.status === s ? " selected" : ""}>${s}</option>`;
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
${windows.rows.map(
  (w) => html`<tr class="w-${w.status}${w.awaiting_correction ? " w-awaiting" : ""}">
<td>${keyText(w.group_key)}</td><td class="t"><a href="${historyHref(input.pipeline, w.window_start, w.group_key)}" title="every revision of this window (straggler explain)">${w.window_start}</a></td><td class="t">${w.window_end}</td><td><span class="badge ${w.status}">${w.status}</span></td>
<td class="n">${String(w.revision)}</td><td>${w.awaiting_correction ? html`<span class="badge awaiting">yes</span>` : "no"}</td>
<td class="n">${count(w.event_count)}</td><td class="n">${w.value_sum ?? "-"}</td><td class="n">${w.value_min ?? "-"}</td><td class="n">${w.value_max ?? "-"}</td>
<td class="n">${w.value_avg === null ? "-" : Number(w.value_avg).toFixed(2)}</td><td class="t">${w.updated_at}</td></tr>`,
)}
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

export function correctionsSection(input: PipelinePageInput): Html {
  const runs = input.corrections;
  return html`<section id="corrections">
<h2>Correction runs <small>latest first</small></h2>
${
  runs.length === 0
    ? html`<p class="note">No correction run yet.</p>`
    : html`
<table class="grid" id="correction-runs"><thead><tr><th class="n">run</th><th>trigger</th><th>status</th><th>range</th><th>started</th><th class="n">duration</th>
<th class="n">examined</th><th class="n">changed</th><th class="n">events recovered</th></tr></thead><tbody>
${runs.map(
  ({ run }) => html`<tr data-run="${String(run.run_id)}"><td class="n">${String(run.run_id)}</td><td>${run.trigger}</td>
<td><span class="badge ${run.status === "succeeded" ? "good" : run.status === "failed" ? "bad" : "idle"}">${run.status}</span>${run.error ? html` <span class="error">${run.error}</span>` : ""}</td>
<td class="t">${run.range_start ? `${run.range_start} – ${run.range_end}` : "awaiting windows only"}${run.group_keys ? ` (keys ${run.group_keys.join(", ")})` : ""}</td>
<td class="t">${run.started_at}</td><td class="n">${run.duration_ms === null ? "-" : `${count(run.duration_ms)} ms`}</td>
<td class="n">${run.windows_examined === null ? "-" : count(run.windows_examined)}</td><td class="n">${run.windows_changed === null ? "-" : count(run.windows_changed)}</td>
<td class="n">${run.events_recovered === null ? "-" : count(run.events_recovered)}</td></tr>`,
)}
</tbody></table>
${runs
  .filter((r) => r.changeCount > 0)
  .map(
    ({ run, changes, changeCount }) => html`<details class="changes" data-run="${String(run.run_id)}">
<summary>Run ${String(run.run_id)}: ${count(changeCount)} window${changeCount === 1 ? "" : "s"} changed${changeCount > CHANGES_SHOWN ? ` (first ${CHANGES_SHOWN} shown; all: GET /pipelines/${input.pipeline.name}/corrections/${run.run_id})` : ""}</summary>
<table class="grid"><thead><tr><th>key</th><th>window start</th><th>revision</th><th>before</th><th>after</th><th class="n">late events</th></tr></thead><tbody>
${changes.map(
  (
    c,
  ) => html`<tr><td>${keyText(c.group_key)}</td><td class="t">${c.window_start}</td><td>${c.revision_before === null ? "new" : String(c.revision_before)} → ${String(c.revision_after)}</td>
<td>${aggregateText(c.count_before, c.sum_before)}</td><td>${aggregateText(c.count_after, c.sum_after)}</td><td class="n">${count(c.late_event_count)}</td></tr>`,
)}
</tbody></table></details>`,
  )}`
}
</section>`;
}

export function actionsSection(input: PipelinePageInput): Html {
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
export function inputsSection(pipeline: PipelineConfig, o: PipelineOverview): Html {
  const declared = declaredInputs(pipeline);
  const seen = o.status.checkpoint?.inputs ?? [];
  if (declared.length < 2 && seen.every((i) => i.input === DEFAULT_INPUT)) return html``;
  const settings = watermarkSettingsOf(pipeline);
  const holder = watermarkHolder(o, pipeline);
  const watermark = usOf(o.status.checkpoint?.watermark ?? null);
  const names = [...declared, ...seen.map((i) => i.input).filter((n) => !declared.includes(n))];
  const clock = seen.reduce<bigint | null>((m, i) => {
    const u = usOf(i.lastIngestionTime);
    return u !== null && (m === null || u > m) ? u : m;
  }, null);
  const role = (i: CheckpointInput | undefined): string => {
    if (!i || i.watermark === null) return "no row yet: not in the choice";
    const last = usOf(i.lastIngestionTime);
    if (
      settings.idleTimeoutMs !== undefined &&
      clock !== null &&
      last !== null &&
      clock - last >= BigInt(settings.idleTimeoutMs) * 1000n
    )
      return "idle: left out of the choice";
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
