/** `status` lines for what holds the watermark and the last reconcile run (docs/continuous-reconcile.md). */
import { formatDuration } from "../config/duration.js";
import type { PipelineExtras } from "../observe/pipelineExtras.js";

/** The holder line, when the pipeline has more than one input; the last reconcile run's line, once one ran. */
export function extrasLines(s: Partial<PipelineExtras>): string[] {
  const lines: string[] = [];
  const h = s.watermarkHolder;
  if (h && h.others.length > 0) {
    const idle = h.others.filter((o) => o.idle).map((o) => o.input);
    const held =
      h.input === null ? "no input (none has a watermark, or all are idle)" : `input ${h.input} since ${h.since}`;
    const gap = h.behindOthersMs === null ? "" : `, ${formatDuration(h.behindOthersMs)} behind the next input`;
    lines.push(`  watermark held by:     ${held}${gap}${idle.length > 0 ? `; idle: ${idle.join(", ")}` : ""}`);
  }
  const r = s.lastReconcile;
  if (r) {
    const slice = r.rangeStart === null ? "all time" : `[${r.rangeStart}, ${r.rangeEnd})`;
    const found =
      r.status === "failed"
        ? `failed: ${r.error}`
        : `${r.windowsChecked} windows checked, ${r.windowsMismatched} mismatched`;
    lines.push(
      `  last reconcile:        run ${r.runId} (${r.trigger}, sample ${r.sample}) at ${r.finishedAt} over ${slice}: ${found}`,
    );
  }
  return lines;
}
