/**
 * The pipeline pages as HTML: `/ui` (every pipeline with its state) and
 * `/ui/pipelines/{pipeline}` (tiles, charts over the recent batches, the lateness
 * histogram, alerts, windows, correction runs, the recompute form; the sections below the
 * tiles are in sections.ts, the state badge in state.ts). Tables are rendered here; the
 * charts are drawn in the browser (`assets/page.js`, uPlot) from what it fetches after the
 * page: the batches' series (`GET /ui/pipelines/{pipeline}/batches`, which reads bronze for the
 * quarantined rows by reason) and the lateness section (latenessSection.ts).
 */
import { windowSpecOf, type PipelineConfig } from "../config/pipelines.js";
import { describeCalendar } from "../core/windows.js";
import { shortDuration } from "../observe/latenessText.js";
import type { PipelineOverview } from "./data.js";
import { count, html, layout, stat } from "./html.js";
import { latenessPlaceholder } from "./latenessSection.js";
import {
  actionsSection,
  alertsSection,
  correctionsSection,
  inputsSection,
  pipelineHref,
  windowsSection,
  type PipelinePageInput,
} from "./sections.js";
import { stateOf } from "./state.js";

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

/** `GET /ui/pipelines/{pipeline}`. */
export function pipelinePage(input: PipelinePageInput): string {
  const { pipeline, overview: o, batchCount } = input;
  const s = o.status;
  const state = stateOf(o, pipeline);
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
${stat(
  "quarantined",
  "quarantined",
  count(s.ledger.quarantined),
  Object.entries(s.ledger.quarantinedByReason)
    .map(([r, n]) => `${r} ${n}`)
    .join(", "),
)}
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
<section id="batches" data-pipeline="${pipeline.name}" data-batches="${String(input.batchesShown)}">
<h2>Recent batches <small>the last ${batchCount === 1 ? "micro-batch" : `${count(batchCount)} micro-batches`} (<a href="?batches=${String(Math.min(10_000, input.batchesShown * 4))}">more</a>)</small></h2>
${
  batchCount === 0
    ? html`<p class="note">No micro-batch yet.</p>`
    : html`<div class="charts">
<div class="chart" data-chart="rates" aria-label="input and processing rate"></div>
<div class="chart" data-chart="duration" aria-label="batch duration"></div>
<div class="chart span" data-chart="eventTime" aria-label="max event time and watermark"></div>
<div class="chart" data-chart="dropped" aria-label="dropped pairs"></div>
<div class="chart" data-chart="quarantined" aria-label="quarantined rows by reason"></div>
</div>`
}
</section>
${latenessPlaceholder(pipeline.name)}
${windowsSection(input)}
${correctionsSection(input)}
${actionsSection(input)}`;
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
  return layout(
    `Error ${status}`,
    html`<h1>Error ${String(status)}</h1><p class="error" id="error-message">${message}</p><p><a href="/ui">All pipelines</a></p>`,
  );
}

/** The window shape in words: `tumbling windows of 1h`, `session windows with a gap of 30m`. */
function windowShape(pipeline: PipelineConfig): string {
  if (pipeline.window.type === "session") return `session windows with a gap of ${shortDuration(pipeline.window.gap)}`;
  const spec = windowSpecOf(pipeline);
  return `${pipeline.window.type} windows of ${spec.calendar !== undefined ? describeCalendar(spec) : `${shortDuration(spec.sizeMs)}${spec.slideMs !== spec.sizeMs ? ` every ${shortDuration(spec.slideMs)}` : ""}`}`;
}
