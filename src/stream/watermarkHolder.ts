/**
 * What holds a pipeline's watermark, as `status`, `GET /pipelines`, the page and `/metrics` show it
 * (docs/continuous-reconcile.md "What holds the watermark"): the input the watermark policy chose
 * after the last batch, since when it has, and how far behind (policy min) or ahead (max) of the
 * other inputs it is. Idle inputs (`watermark.idleTimeout`) are listed as such and never hold.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Queryable } from "../db/pool.js";
import { readWatermarkHolder } from "../db/sql/observe/watermarkHolder.js";

/** One other input: its watermark (ISO 8601; null before it sent), idle or not, and its distance from the holder's. */
interface OtherInput {
  input: string;
  watermark: string | null;
  idle: boolean;
  /** This input's watermark minus the holder's, ms (null without a watermark): positive when it is ahead. */
  aheadOfHolderMs: number | null;
}

export interface WatermarkHolder {
  /** The input whose watermark the policy chose; null when none has one yet, or every input is idle. */
  input: string | null;
  /** Its watermark (ISO 8601). */
  watermark: string | null;
  /** Start of the first batch of the latest run of batches it has held the watermark in (ISO 8601). */
  since: string | null;
  /**
   * How far it holds the pipeline back, ms: under policy min, the nearest other non-idle input's watermark
   * minus the holder's (what the watermark would gain without it); under max, the holder's minus the
   * nearest other's (how far it leads). Null when no other non-idle input has a watermark.
   */
  behindOthersMs: number | null;
  others: OtherInput[];
}

const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));

/** @returns null before the pipeline's first batch */
export async function watermarkHolder(client: Queryable, pipeline: PipelineConfig): Promise<WatermarkHolder | null> {
  const policy = pipeline.watermark.policy ?? "min";
  const row = await readWatermarkHolder(client, pipeline.name, policy);
  if (!row) return null;
  const held = row.inputs.find((i) => i.input === row.holder) ?? null;
  const heldMs = ms(held?.watermark ?? null);
  const others = row.inputs
    .filter((i) => i.input !== row.holder)
    .map((i) => {
      const at = ms(i.watermark);
      return {
        input: i.input,
        watermark: i.watermark,
        idle: i.idle,
        aheadOfHolderMs: at === null || heldMs === null ? null : at - heldMs,
      };
    });
  const gaps = others.filter((o) => !o.idle && o.aheadOfHolderMs !== null).map((o) => Math.abs(o.aheadOfHolderMs!));
  return {
    input: row.holder,
    watermark: held?.watermark ?? null,
    since: row.holder === null ? null : row.since,
    behindOthersMs: gaps.length === 0 ? null : Math.min(...gaps),
    others,
  };
}
