/**
 * `/metrics` rows for what holds each pipeline's watermark (src/stream/watermarkHolder.ts):
 * `straggler_watermark_holder{pipeline,input}` 1 for the holder, `straggler_watermark_holder_since_seconds`,
 * `straggler_watermark_holder_behind_seconds` and `straggler_input_idle{pipeline,input}` (1 idle, 0 not).
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Queryable } from "../db/pool.js";
import { watermarkHolder } from "../stream/watermarkHolder.js";

type Row = { labels: Record<string, string>; value: number };

export interface HolderRows {
  holder: Row[];
  since: Row[];
  behind: Row[];
  idle: Row[];
}

/** The rows of every pipeline of `pipelines` that has run a batch. */
export async function readHolderRows(client: Queryable, pipelines: PipelineConfig[]): Promise<HolderRows> {
  const out: HolderRows = { holder: [], since: [], behind: [], idle: [] };
  for (const p of pipelines) {
    const h = await watermarkHolder(client, p);
    if (!h) continue;
    const pipeline = p.name;
    if (h.input !== null) {
      const labels = { pipeline, input: h.input };
      out.holder.push({ labels, value: 1 });
      if (h.since !== null) out.since.push({ labels, value: Date.parse(h.since) / 1000 });
      if (h.behindOthersMs !== null) out.behind.push({ labels, value: h.behindOthersMs / 1000 });
      out.idle.push({ labels, value: 0 });
    }
    for (const o of h.others) out.idle.push({ labels: { pipeline, input: o.input }, value: o.idle ? 1 : 0 });
  }
  return out;
}
