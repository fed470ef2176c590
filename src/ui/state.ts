/**
 * A pipeline's state in a few words for the pages (`/ui` and the pipeline page's badge), and the input
 * holding its watermark back: read from the overview the pages load (src/ui/data.ts), nothing queried here.
 */
import { watermarkSettingsOf, type PipelineConfig } from "../config/pipelines.js";
import { isoToUs } from "../core/instants.js";
import type { CheckpointInput } from "../db/sql/stream/readCheckpoint.js";
import type { PipelineOverview } from "./data.js";
import { count } from "./html.js";

/** A badge's tone, from best to worst: good, idle, busy, bad. */
export type Tone = "idle" | "busy" | "bad" | "good";
const TONE_RANK: Record<Tone, number> = { good: 0, idle: 1, busy: 2, bad: 3 };

/** How long a stream may go without a batch while rows wait before it is called stalled: ten trigger intervals, at least a minute. */
const stallAfterMs = (pipeline: PipelineConfig) => Math.max(60_000, 10 * pipeline.trigger.interval);

/** Microseconds of an ISO instant, or null. */
export const usOf = (iso: string | null): bigint | null => (iso === null ? null : isoToUs(iso));

/**
 * The input holding the pipeline's watermark back, when one is quiet: with the `min` policy and
 * two inputs or more, the input (not idle by `watermark.idleTimeout`) whose watermark is the
 * pipeline's, when it last sent (ingestion time; its max event time when that is unknown) more
 * than the watermark delay before the input that sent last. A feed that is behind in event time
 * but keeps sending holds the watermark by design and is not named.
 * @returns the input and since when it is quiet (ISO), or null
 */
export function watermarkHolder(
  o: PipelineOverview,
  pipeline: PipelineConfig,
): { input: string; quietSince: string; watermark: string } | null {
  const c = o.status.checkpoint;
  const settings = watermarkSettingsOf(pipeline);
  if (!c || c.watermark === null || settings.policy !== "min" || c.inputs.length < 2) return null;
  const sent = (i: CheckpointInput) => i.lastIngestionTime ?? i.maxEventTime;
  const clock = c.inputs.reduce<bigint | null>((m, i) => {
    const u = usOf(i.lastIngestionTime);
    return u !== null && (m === null || u > m) ? u : m;
  }, null);
  const idle = (i: CheckpointInput) => {
    const last = usOf(i.lastIngestionTime);
    return (
      settings.idleTimeoutMs !== undefined &&
      clock !== null &&
      last !== null &&
      clock - last >= BigInt(settings.idleTimeoutMs) * 1000n
    );
  };
  const holder = c.inputs.find((i) => i.watermark !== null && !idle(i) && usOf(i.watermark) === usOf(c.watermark));
  if (!holder) return null;
  const latest = c.inputs.reduce<bigint | null>((m, i) => {
    const u = usOf(sent(i));
    return u !== null && (m === null || u > m) ? u : m;
  }, null);
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
 * (PolicyCheck in src/stream/policyGuard.ts).
 * @param nowMs the clock the stall is judged on (epoch ms)
 */
export function stateOf(
  o: PipelineOverview,
  pipeline: PipelineConfig,
  nowMs = Date.now(),
): { label: string; tone: Tone } {
  if (o.policy.state === "refused")
    return { label: o.policy.changes.length === 0 ? "refused: time zone" : "refused: policy changed", tone: "bad" };
  const parts: { label: string; tone: Tone }[] = [];
  if (o.hold !== null) parts.push({ label: `held since ${o.hold.heldAt} (${o.hold.reason})`, tone: "busy" });
  const firing = o.alerts.filter((a) => a.state === "firing").map((a) => a.alert);
  if (firing.length > 0) parts.push({ label: `firing: ${firing.join(", ")}`, tone: "bad" });
  const s = o.status;
  const lastBatchAt = typeof s.lastProgress?.timestamp === "string" ? Date.parse(s.lastProgress.timestamp) : null;
  if (s.checkpoint === null)
    parts.push({ label: s.backlogRows > 0 ? "not started (rows waiting)" : "not started", tone: "idle" });
  else if (s.backlogRows > 0 && lastBatchAt !== null && nowMs - lastBatchAt >= stallAfterMs(pipeline)) {
    parts.push({
      label: `stalled: ${count(s.backlogRows)} rows waiting, last batch at ${new Date(lastBatchAt).toISOString()}`,
      tone: "bad",
    });
  } else if (s.backlogRows > 0) parts.push({ label: "catching up", tone: "busy" });
  else {
    const holder = watermarkHolder(o, pipeline);
    parts.push(
      holder
        ? { label: `held by input ${holder.input} (quiet since ${holder.quietSince})`, tone: "busy" }
        : { label: "up to date", tone: "good" },
    );
  }
  if (s.failedWindows > 0)
    parts.push({ label: `${count(s.failedWindows)} failed window${s.failedWindows === 1 ? "" : "s"}`, tone: "bad" });
  if (s.windows.awaitingCorrection > 0)
    parts.push({ label: `${count(s.windows.awaitingCorrection)} awaiting correction`, tone: "busy" });
  const tone = parts.reduce<Tone>((t, p) => (TONE_RANK[p.tone] > TONE_RANK[t] ? p.tone : t), "good");
  return { label: parts.map((p) => p.label).join(" · "), tone };
}
