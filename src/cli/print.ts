/**
 * How the CLI prints for people, on stdout: a landing, a micro-batch, a
 * pipeline's status and summary, a correction run. (`--json` prints the
 * documents these lines are made from; logs and progress go to stderr.)
 * A list that can be long is cut after `--limit` lines (default
 * `DEFAULT_LIMIT`) with a line counting the rest (`moreLines`, src/cli/lists.ts);
 * the summary line comes first, and `--json` has every item.
 */
import { extrasLines } from "./extrasLines.js";
import type { PipelineExtras } from "../observe/pipelineExtras.js";
import { formatDuration } from "../config/duration.js";
import type { CorrectionSummary } from "../correction/correct.js";
import type { LandResult } from "../ingest/landAnswer.js";
import type { CheckpointInput, Hold } from "../core/model.js";
import type { AlertView } from "../observe/alerts.js";
import type { PolicyCheck } from "../guards/index.js";
import type { BatchProgress } from "../stream/runBatch.js";
import type { PipelineStatus } from "../stream/status.js";
import { DEFAULT_INPUT } from "../core/watermark.js";
import { DEFAULT_LIMIT, moreLines } from "./lists.js";

/** A landing as one line for people. */
export function landLine(r: LandResult): string {
  const reasons = Object.entries(r.byReason)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  return r.alreadyLanded
    ? `${r.pipeline}: ${r.source} already landed; skipped`
    : `${r.pipeline}: ${r.source}: landed ${r.landed}, accepted ${r.accepted}, quarantined ${r.quarantined}${reasons ? ` (${reasons})` : ""}`;
}

/** A micro-batch's progress as one line for people (Spark's progress names). */
export function batchLine(b: BatchProgress): string {
  return (
    `${b.pipeline} batch ${b.batchId}: ${b.numInputRows} rows in ${b.durationMs} ms (${Math.round(b.processedRowsPerSecond ?? 0)} rows/s), ` +
    `watermark ${b.nextWatermark ?? "none"}, numRowsDroppedByWatermark ${b.numRowsDroppedByWatermark}, ` +
    `numRowsUpdated ${b.numRowsUpdated}, finalized ${b.numRowsFinalized}, numRowsTotal ${b.numRowsTotal}`
  );
}

/** A group key as the CLI prints it: `(null)` for the null group, `""` for the empty key. */
export function keyLabel(key: string | null): string {
  return key === null ? "(null)" : key === "" ? '""' : key;
}

/** The block of `replay` after its summary line: `extra` lines first, then the pipeline's ledger, windows and checkpoint. */
export function summaryLines(s: PipelineStatus, extra: Record<string, unknown> = {}): string[] {
  const reasons =
    Object.entries(s.ledger.quarantinedByReason)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ") || "none";
  return [
    ...Object.entries(extra).map(([k, v]) => `  ${k}: ${v}`),
    `  rows landed:              ${s.ledger.landed}`,
    `  accepted:                 ${s.ledger.accepted}`,
    `  quarantined:              ${s.ledger.quarantined} (${reasons})`,
    `  dropped by watermark:     ${s.numRowsDroppedByWatermark} (event, window) pairs, in ${s.windows.awaitingCorrection} windows awaiting correction`,
    `  windows open / final:     ${s.windows.open} / ${s.windows.final}${s.windows.corrected ? ` (+${s.windows.corrected} corrected)` : ""}`,
    `  final watermark:          ${s.checkpoint?.watermark ?? "none"}`,
    `  stream batches:           ${s.checkpoint ? s.checkpoint.batchId + 1 : 0}`,
  ];
}

/** The configured policy against the live results (src/guards/policy.ts). */
function policyLine(p: PolicyCheck): string {
  if (p.state === "unrecorded" && p.live !== null)
    return `unrecorded: results version ${p.live.version} (policy ${p.live.policyVersion}) holds no window results and no rows accepted under another policy; the next batch adopts policy ${p.policyVersion} (${p.changes.join("; ")})`;
  if (p.state === "unrecorded") return `unrecorded (the first batch records policy ${p.policyVersion})`;
  if (p.state === "live") return `live: results version ${p.live!.version}, policy ${p.policyVersion}`;
  if (p.changes.length === 0 && p.message !== null) return `REFUSED: ${p.message}`; // not a policy change: the window's zone (src/guards/timeZone.ts)
  return `REFUSED: the configured policy ${p.policyVersion} differs from the live results' (version ${p.live!.version}, policy ${p.live!.policyVersion}); batches and corrections stop until it is put back or the pipeline dropped (straggler drop):`;
}

/** Each input's watermark and max event time, when the pipeline has more than its default input (docs/DESIGN.md "Several inputs"). */
function inputLines(inputs: CheckpointInput[]): string[] {
  if (inputs.length === 0 || (inputs.length === 1 && inputs[0]!.input === DEFAULT_INPUT)) return [];
  return inputs.map(
    (i) =>
      `    input ${i.input}: watermark ${i.watermark ?? "none"}, max event time ${i.maxEventTime ?? "-"}, last sent ${i.lastIngestionTime ?? "unknown"}`,
  );
}

/** `{ A: 1, B: 2 }` as `A 1, B 2`; `none` when empty. */
const byName = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ") || "none";

type StatusOf = PipelineStatus & {
  alerts: AlertView[];
  policy: PolicyCheck;
  hold?: Hold | null;
} & Partial<PipelineExtras>;

/**
 * `status`'s summary line over the pipelines shown: how many, the alerts firing (by pipeline), the
 * pipelines refused by their policy or held, and the work waiting (backlog, windows awaiting correction, failed windows).
 */
export function statusSummaryLine(all: readonly StatusOf[]): string {
  const firing = all.flatMap((s) =>
    s.alerts.filter((a) => a.state === "firing").map((a) => `${s.pipeline} ${a.alert}`),
  );
  const sum = (f: (s: StatusOf) => number) => all.reduce((n, s) => n + f(s), 0);
  return (
    `${all.length} pipeline${all.length === 1 ? "" : "s"}: ${firing.length} alert${firing.length === 1 ? "" : "s"} firing${firing.length ? ` (${firing.join(", ")})` : ""}, ` +
    `${all.filter((s) => s.policy.state === "refused").length} refused by policy, ${all.filter((s) => s.hold).length} held; ` +
    `backlog ${sum((s) => s.backlogRows)} rows, ${sum((s) => s.windows.awaitingCorrection)} windows awaiting correction, ${sum((s) => s.failedWindows)} failed windows`
  );
}

/**
 * `status` for people: one block per pipeline (the numbers of `status --json` and `GET /pipelines`).
 * @returns the lines, without a trailing newline
 */
export function statusLines(s: StatusOf): string[] {
  const c = s.checkpoint;
  const lagMs = c?.watermark && c.maxEventTime ? Date.parse(c.maxEventTime) - Date.parse(c.watermark) : null;
  const watermarkTail = !c?.maxEventTime
    ? " (no batch has read a row yet)"
    : lagMs === null
      ? ` (max event time ${c.maxEventTime})`
      : `, ${formatDuration(lagMs)} behind the max event time ${c.maxEventTime}`;
  const p = s.lastProgress as {
    batch_id?: number;
    trigger?: string;
    timestamp?: string;
    num_input_rows?: number;
    duration_ms?: number;
    num_rows_dropped_by_watermark?: number;
  } | null;
  const alert = (a: AlertView) =>
    a.state === "firing" ? `${a.alert} FIRING since ${a.since} (value ${a.value})` : `${a.alert} ok`;
  return [
    s.pipeline,
    `  watermark:             ${c?.watermark ?? "none"}${watermarkTail}`,
    ...inputLines(c?.inputs ?? []),
    ...extrasLines(s),
    `  stream:                ${c ? `${c.batchId + 1} batches, offset ${c.lastOffset}` : "no batch yet"}; backlog ${s.backlogRows} rows`,
    `  ledger:                ${s.ledger.landed} landed = ${s.ledger.accepted} accepted + ${s.ledger.quarantined} quarantined (${byName(s.ledger.quarantinedByReason)})`,
    `  dropped by watermark:  ${s.numRowsDroppedByWatermark} (event, window) pairs; ${s.windows.awaitingCorrection} windows awaiting correction`,
    `  windows:               ${s.windows.open} open, ${s.windows.final} final, ${s.windows.corrected} corrected; ${s.failedWindows} failed`,
    `  sources:               ${s.sources.landed} landed, ${s.sources.refused} refused, ${s.sources.changed_after_landing} changed after landing, ${s.sources.waiting_to_settle} waiting to settle`,
    `  owner:                 ${s.owner ?? "none (no service runs this pipeline)"}`,
    ...(p
      ? [
          `  last batch:            ${p.batch_id} (${p.trigger}) at ${p.timestamp}: ${p.num_input_rows} rows in ${p.duration_ms} ms, numRowsDroppedByWatermark ${p.num_rows_dropped_by_watermark}`,
        ]
      : []),
    `  alerts:                ${s.alerts.map(alert).join(", ") || "none configured"}`,
    `  policy:                ${policyLine(s.policy)}`,
    ...(s.policy.state === "refused" ? s.policy.changes.map((c) => `    ${c}`) : []),
    ...(s.hold
      ? [
          `  hold:                  held since ${s.hold.heldAt} (hold ${s.hold.holdId}: ${s.hold.reason}); straggler.window_results serves what it served then`,
        ]
      : []),
  ];
}

/**
 * A correction run for people: its counts, the first `shown` windows it changed, and
 * where to read the rest — the public views, never the tables behind them.
 */
export function correctionLines(s: CorrectionSummary, limit = DEFAULT_LIMIT): string[] {
  const lines = [
    `${s.pipeline}: correction run ${s.runId} ${s.status}: ${s.windowsExamined} windows examined, ${s.windowsChanged} changed, ` +
      `${s.eventsRecovered} late events recovered, ${s.windowsFailed ? `${s.windowsFailed} failed (straggler.failed_windows), ` : ""}${s.durationMs} ms${s.error ? ` — ${s.error}` : ""}`,
  ];
  if (s.windowsPastHorizon) {
    lines.push(
      `  ${s.windowsPastHorizon} windows awaiting correction not recomputed: archived rows could be in them (past the correction horizon; straggler restore puts an archive back)`,
    );
  }
  lines.push(
    ...moreLines(
      s.changes,
      limit,
      (c) =>
        `  ${keyLabel(c.groupKey)} [${c.windowStart}, ${c.windowEnd}) count ${c.before?.count ?? "-"} -> ${c.after.count}, sum ${c.before?.sum ?? "-"} -> ${c.after.sum} (revision ${c.revision}, ${c.lateEventCount} late events)`,
      { what: "windows changed" },
    ),
  );
  if (s.windowsChanged > 0 && s.runId !== null) {
    lines.push(
      `  read: straggler.window_results (the windows now), straggler.correction_audit WHERE run_id = ${s.runId} (each window before and after), straggler.correction_history (the runs)`,
    );
  }
  return lines;
}

/**
 * Micro-batches for people: a summary line (`<pipeline>: N micro-batches, R rows, watermark W, D dropped
 * by watermark`, or `nothing new in bronze`), the first `limit` batch lines, then how many more and the last
 * one (its watermark is where the stream stands).
 */
export function batchesLines(pipeline: string, batches: readonly BatchProgress[], limit: number): string[] {
  if (batches.length === 0) return [`${pipeline}: nothing new in bronze`];
  const last = batches[batches.length - 1]!;
  const rows = batches.reduce((n, b) => n + b.numInputRows, 0);
  const dropped = batches.reduce((n, b) => n + b.numRowsDroppedByWatermark, 0);
  return [
    `${pipeline}: ${batches.length} micro-batch${batches.length === 1 ? "" : "es"}, ${rows} rows, watermark ${last.nextWatermark ?? "none"}, ${dropped} (event, window) pairs dropped by watermark`,
    ...moreLines(batches, limit, batchLine, { indent: "", what: "micro-batches", last: true }),
  ];
}
