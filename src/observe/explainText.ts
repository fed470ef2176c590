/**
 * `straggler explain`'s human output: a summary line, then one line per revision (number,
 * instant, cause, value before → after, status), the late events and the quarantined rows.
 * A value is the window's sum when the pipeline has a value field (with its count), else its
 * count; `—` is no window.
 */
import { formatDuration } from "../config/duration.js";
import type { Aggregates, LateEvent, Revision } from "../core/windowHistory.js";
import type { WindowExplanation } from "./explain.js";

const keyText = (k: string | null) => (k === null ? "(null)" : k === "" ? '""' : JSON.stringify(k));
const valueText = (a: Aggregates | null) =>
  a === null ? "—" : a.sum === null ? `count ${a.count}` : `${a.sum} (count ${a.count})`;
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const watermarkText = (w: string | null) => w ?? "none";

/** What made a revision, in a few words. */
function causeText(r: Revision): string {
  const c = r.cause;
  switch (c.kind) {
    case "micro-batch":
      return `micro-batch ${c.batchId} (watermark ${watermarkText(c.watermark)} → ${watermarkText(c.watermarkAfter)}, ${plural(c.eventsAdded, "event")} added${c.amended.length > 0 ? `, amended ${c.amended.join(", ")}` : ""})`;
    case "correction": {
      const trigger = c.trigger === "cron" && c.cronSlot !== null ? `cron ${c.cronSlot}` : c.trigger;
      const parts = [`${plural(c.lateEvents.length, "late event")}`];
      if (c.amended.length > 0) parts.push(`amended ${c.amended.join(", ")}`);
      if (c.reconcileRunId !== null) parts.push(`reconcile run ${c.reconcileRunId} found it differing`);
      return `correction run ${c.runId} (${trigger}; ${parts.join(", ")})`;
    }
    case "cutover":
      return `cutover to version ${c.version} (from version ${c.previousVersion})`;
    case "hold":
      return `hold ${c.holdId} (${c.rule ?? "by hand"}: ${c.reason}): the published value stays`;
    case "release":
      return `release of hold ${c.holdId}: what changed while held is published`;
  }
}

function revisionLine(r: Revision & { n: number }): string {
  const where = r.window === undefined ? "" : ` [${r.window.start}, ${r.window.end})`;
  const replaced =
    r.replaced === undefined
      ? ""
      : `, replacing ${r.replaced.map((s) => `[${s.start}, ${s.end}) ${valueText(s)}`).join(" and ")}`;
  const status = `${r.status}${r.revision > 1 ? `, revision ${r.revision}` : ""}${r.published ? "" : ", not published (held)"}`;
  return `  ${r.n}. ${r.at}  ${causeText(r)}${where}: ${valueText(r.before)} → ${valueText(r.after)}  ${status}${replaced}`;
}

function lateLine(e: LateEvent): string {
  const dropped =
    e.droppedInBatch === null
      ? "not dropped by a micro-batch"
      : `dropped by micro-batch ${e.droppedInBatch} (watermark ${watermarkText(e.droppedAtWatermark)})`;
  const recovered =
    e.recoveredByRun === null ? "awaiting correction" : `recovered by correction run ${e.recoveredByRun}`;
  return `  ${e.eventId} (seq ${e.seq}): event time ${e.eventTime}, value ${e.value ?? "null"}, ingestion time ${e.ingestionTime}, landed ${e.landedAt}, ${formatDuration(e.latenessMs)} late; ${dropped}; ${recovered}`;
}

/** The summary line. */
export function explainSummary(x: WindowExplanation): string {
  const now =
    x.now === null
      ? "no window now"
      : `${valueText(x.now)}, ${x.now.status}, revision ${x.now.revision}${x.now.held ? ", held" : ""}`;
  const recovered = x.lateEvents.filter((e) => e.recoveredByRun !== null).length;
  const awaiting = x.lateEvents.length - recovered;
  return (
    `${x.pipeline} ${x.windowType} window [${x.window.start}, ${x.window.end}) key ${keyText(x.key)}: ${now}; ${plural(x.revisions.length, "revision")}, ` +
    `${plural(recovered, "late event")} recovered${awaiting > 0 ? `, ${awaiting} awaiting correction` : ""}, ${plural(x.quarantined.total, "quarantined row")}` +
    (x.sessionsMerged.length > 0 ? `, ${plural(x.sessionsMerged.length, "session")} merged or split` : "")
  );
}

/** The whole report, lines joined with newlines. */
export function formatExplanation(x: WindowExplanation): string {
  const lines = [explainSummary(x), ...x.revisions.map(revisionLine)];
  if (x.lateEvents.length > 0) lines.push("late events:", ...x.lateEvents.map(lateLine));
  if (x.sessionsMerged.length > 0)
    lines.push(
      "sessions merged into it or split from it:",
      ...x.sessionsMerged.map((s) => `  [${s.start}, ${s.end}) ${valueText(s)}`),
    );
  if (x.quarantined.total === 0) lines.push("quarantined rows that would have fallen in it: none");
  else {
    lines.push(`quarantined rows that would have fallen in it: ${x.quarantined.total}`);
    for (const q of x.quarantined.rows)
      lines.push(
        `  ${q.eventId} (seq ${q.seq}): ${q.reason ?? "?"}${q.detail ? ` (${q.detail})` : ""}, event time ${q.eventTime}, value ${q.value ?? "null"}, landed ${q.landedAt}`,
      );
    if (x.quarantined.rows.length < x.quarantined.total)
      lines.push(
        `  … ${x.quarantined.total - x.quarantined.rows.length} more (GET /pipelines/${x.pipeline}/quarantine lists them all)`,
      );
  }
  return lines.join("\n");
}
