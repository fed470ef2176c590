/**
 * The lateness report as text for people (`straggler lateness`): the
 * distribution, its histogram, the what-if table and the recommendation.
 * Durations are shortened to their two largest units (`9m 47s`, `2d 7h`: `shortDuration`, src/observe/latenessText.ts).
 */
import { DEFAULT_LIMIT, moreLines } from "./lists.js";
import type { AdvisedOutcome, LatenessAdvice } from "../observe/latenessAdvice.js";
import { shortDuration } from "../observe/latenessText.js";

/** Time to final and open windows of an outcome, when the report has them (the replay's, `--exact`). */
const finality = (o: Omit<AdvisedOutcome, "labels">) =>
  (o.timeToFinal
    ? `; time to final ${shortDuration(o.timeToFinal.medianMs)} median, ${shortDuration(o.timeToFinal.p99Ms)} p99`
    : "") + (o.openWindows ? `; ${o.openWindows.max} open windows at most` : "");

const percent = (share: number) => `${(share * 100).toFixed(3)} %`;
const count = (n: number) => n.toLocaleString("en-US");

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) =>
    `  ${r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!))).join("  ")}`.trimEnd(),
  );
}

const outcomeCells = (o: Omit<AdvisedOutcome, "labels"> & { labels?: string[] }): string[] => [
  shortDuration(o.delayMs),
  (o.labels ?? []).join(", "),
  count(o.droppedPairs),
  count(o.droppedWindows),
  count(o.eventsAffected),
  percent(o.dropShare),
  o.timeToFinal ? `${shortDuration(o.timeToFinal.medianMs)} / ${shortDuration(o.timeToFinal.p99Ms)}` : "-",
  o.openWindows ? `${o.openWindows.max} / ${o.openWindows.mean.toFixed(1)}` : "-",
];

/**
 * The report as lines of text (no trailing newline); without accepted rows (in the range), one line saying so.
 * `keysShown`: lines of the per-key list (most rows first) before "… and N more keys" (default 20).
 */
export function formatLatenessReport(report: LatenessAdvice, keysShown = DEFAULT_LIMIT): string {
  const d = report.distribution;
  const range =
    report.range.from || report.range.to
      ? `, event time in [${report.range.from ?? "-∞"}, ${report.range.to ?? "∞"})`
      : "";
  if (d.count === 0) {
    return `Lateness of ${report.pipeline}: no accepted rows${range}, so nothing to measure yet: land rows and run the stream first (configured delay: ${shortDuration(report.configuredDelayMs)})`;
  }
  const lines = [
    `Lateness of ${report.pipeline} (ingestion time − event time) over ${count(d.count)} accepted rows${range}`,
    `  p50 ${shortDuration(d.p50Ms)}   p90 ${shortDuration(d.p90Ms)}   p99 ${shortDuration(d.p99Ms)}   p99.9 ${shortDuration(d.p999Ms)}   max ${shortDuration(d.maxMs)}   (min ${shortDuration(d.minMs)})`,
    "",
    ...table([
      ["lateness", "rows"],
      ...d.histogram.map((h) => [
        h.fromMs === null
          ? `below ${shortDuration(h.toMs)}`
          : h.toMs === null
            ? `${shortDuration(h.fromMs)} and more`
            : `${shortDuration(h.fromMs)} to ${shortDuration(h.toMs)}`,
        count(h.count),
      ]),
    ]),
  ];
  const keys = report.byKey ?? [];
  lines.push(
    ...moreLines(
      keys,
      keysShown,
      (k) =>
        `  key ${JSON.stringify(k.groupKey)}: ${count(k.count)} rows, p50 ${shortDuration(k.p50Ms)}, p99 ${shortDuration(k.p99Ms)}, max ${shortDuration(k.maxMs)}`,
      { what: "keys" },
    ),
  );
  const w = report.whatIf;
  lines.push(
    "",
    `What-if over the ${count(w.batches)} recorded batches (${count(w.rows)} rows in arrival order; the run recorded ${count(w.recordedDroppedPairs)} dropped pairs):`,
    ...table([
      [
        "delay",
        "why",
        "dropped pairs",
        "windows",
        "events",
        "share",
        "time to final (median / p99)",
        "open windows (max / mean)",
      ],
      ...w.delays.map(outcomeCells),
    ]),
    "",
  );
  const r = report.recommendation;
  lines.push(
    `Recommended delay: ${shortDuration(r.delayMs)} (${r.delayMs} ms), the smallest with at most ${percent(r.targetDropShare)} of events dropped:`,
    `  ${count(r.eventsAffected)} events (${percent(r.dropShare)}) in ${count(r.droppedWindows)} windows${finality(r)}`,
    `  (configured: ${shortDuration(report.configuredDelayMs)})`,
  );
  return lines.join("\n");
}
