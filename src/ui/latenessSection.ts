/**
 * The pipeline page's lateness section, loaded after the page (`assets/page.js` fetches
 * `GET /ui/pipelines/{pipeline}/lateness`): the report replays the accepted rows, so the page's
 * first paint does not wait for it. The section's markup is rendered here, as the rest of the page's.
 */
import { HISTOGRAM_EDGES_MS } from "../observe/lateness.js";
import type { LatenessAdvice } from "../observe/latenessAdvice.js";
import { shortDuration } from "../observe/latenessText.js";
import { count, html, stat, type Html } from "./html.js";

const percent = (share: number) => `${(share * 100).toFixed(3)} %`;

/** Histogram bucket labels as in `straggler lateness`. */
function bucketLabel(h: { fromMs: number | null; toMs: number | null }): string {
  if (h.fromMs === null) return `< ${shortDuration(h.toMs)}`;
  if (h.toMs === null) return `≥ ${shortDuration(h.fromMs)}`;
  return `${shortDuration(h.fromMs)}–${shortDuration(h.toMs)}`;
}

/**
 * Where `delayMs` falls on the histogram's x axis (bar i is centred on i and spans [i − 0.5, i + 0.5]):
 * linear inside [0, 1 s), logarithmic inside the wider buckets, half a bar per decade in the last, open-ended one.
 */
export function histogramPosition(delayMs: number): number {
  const edges = HISTOGRAM_EDGES_MS;
  if (delayMs < 0) return 0;
  for (let i = 0; i < edges.length - 1; i++) {
    const lo = edges[i]!,
      hi = edges[i + 1]!;
    if (delayMs < hi) {
      const frac = lo === 0 ? delayMs / hi : Math.log(delayMs / lo) / Math.log(hi / lo);
      return i + 1 - 0.5 + frac;
    }
  }
  // The open-ended last bucket: half a bar per decade past its edge, kept inside the bar.
  const last = edges.at(-1)!;
  return edges.length - 0.5 + Math.min(0.9, Math.log10(delayMs / last) / 2);
}

/** The section as the page shows it before the report is read: its heading and "loading…". */
export function latenessPlaceholder(pipeline: string): Html {
  return html`<section id="lateness" data-pipeline="${pipeline}" data-state="loading"><h2>Lateness</h2>
<p class="note" id="lateness-loading">loading…</p></section>`;
}

/** The section's content (inside `<section id="lateness">`) for a report, or why there is none. */
function latenessContent(lateness: LatenessAdvice | { error: string }): Html {
  if ("error" in lateness)
    return html`<h2>Lateness</h2><p class="error" id="lateness-error">The lateness report could not be read: ${lateness.error}</p>`;
  const d = lateness.distribution;
  if (d.count === 0)
    return html`<h2>Lateness</h2><p class="note" id="no-lateness">No accepted row yet: nothing to measure.</p>`;
  const r = lateness.recommendation;
  const configured = lateness.whatIf.delays.find((o) => o.labels.includes("configured"));
  return html`<h2>Lateness <small>ingestion time − event time, over ${count(d.count)} accepted rows</small></h2>
<div class="stats">
${stat("p50", "p50", shortDuration(d.p50Ms))}${stat("p90", "p90", shortDuration(d.p90Ms))}${stat("p99", "p99", shortDuration(d.p99Ms))}${stat("p99.9", "p999", shortDuration(d.p999Ms))}${stat("max", "max", shortDuration(d.maxMs))}
${stat("configured delay", "configuredDelay", shortDuration(lateness.configuredDelayMs))}
${stat("recommended delay", "recommendedDelay", shortDuration(r.delayMs), `the smallest delay with at most ${percent(r.targetDropShare)} of events dropped`)}
</div>
<div class="chart wide" data-chart="lateness" aria-label="lateness histogram"></div>
<p class="note">With the configured delay (${shortDuration(lateness.configuredDelayMs)}) the stream drops
<b data-field="configuredDroppedPairs">${count(configured?.droppedPairs ?? 0)}</b> (event, window) pairs (the run recorded ${count(lateness.whatIf.recordedDroppedPairs)});
the recommended ${shortDuration(r.delayMs)} would drop ${count(r.droppedPairs)} (${percent(r.dropShare)} of events)${
    r.timeToFinal
      ? html` and make windows final
${shortDuration(r.timeToFinal.medianMs)} after their end (median; p99 ${shortDuration(r.timeToFinal.p99Ms)})`
      : ""
  }.
<code>straggler lateness -p …</code> prints the what-if table.</p>`;
}

/** The histogram's chart data (bars and the configured and recommended delays' marks); null with no accepted row. */
function latenessChart(lateness: LatenessAdvice | { error: string }) {
  if ("error" in lateness || lateness.distribution.count === 0) return null;
  return {
    buckets: lateness.distribution.histogram.map((h) => ({ label: bucketLabel(h), count: h.count })),
    marks: [
      {
        label: `configured ${shortDuration(lateness.configuredDelayMs)}`,
        x: histogramPosition(lateness.configuredDelayMs),
        kind: "configured",
      },
      {
        label: `recommended ${shortDuration(lateness.recommendation.delayMs)}`,
        x: histogramPosition(lateness.recommendation.delayMs),
        kind: "recommended",
      },
    ],
  };
}

/**
 * `GET /ui/pipelines/{pipeline}/lateness`'s answer: `html`, the section's content (escaped markup),
 * and `chart`, the histogram's data for `assets/page.js` (null when there is nothing to draw).
 */
export function latenessFragment(lateness: LatenessAdvice | { error: string }): {
  html: string;
  chart: ReturnType<typeof latenessChart>;
} {
  return { html: latenessContent(lateness).text, chart: latenessChart(lateness) };
}
