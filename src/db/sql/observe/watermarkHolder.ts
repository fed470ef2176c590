/**
 * What holds a pipeline's watermark (docs/continuous-reconcile.md "What holds the watermark"):
 * the inputs of its last batch (`batch_progress.inputs`: input, watermark, idle) and since when
 * the same input has held it — the start (`timestamp`) of the first of the latest batches whose
 * holder it was. The holder of a batch is its input the policy chose: of the inputs with a
 * watermark that are not idle, the lowest (policy min) or highest (max) watermark, the first by
 * name on a tie (src/core/watermark.ts `advanceInputs`). The walk back stops at the first batch
 * with another holder (the primary key serves it backwards).
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

/** One input as the last batch left it; instants ISO 8601 UTC. */
interface HolderInput {
  input: string;
  watermark: string | null;
  idle: boolean;
}

/** The last batch's inputs and since when its holder has held; null before the first batch with inputs. */
export interface HolderRow {
  batchId: number;
  inputs: HolderInput[];
  holder: string | null;
  /** When the first batch of the holder's current streak started. */
  since: string | null;
}

const holderOf = (batch: string) => `(SELECT e->>'input' FROM jsonb_array_elements(${batch}.inputs) e
   WHERE e->>'watermark' IS NOT NULL AND NOT coalesce((e->>'idle')::boolean, false)
   ORDER BY CASE WHEN $2 = 'min' THEN (e->>'watermark')::timestamptz END ASC,
            CASE WHEN $2 = 'max' THEN (e->>'watermark')::timestamptz END DESC, e->>'input' LIMIT 1)`;

const HOLDER_SQL = `WITH last AS (
  SELECT p.batch_id, p.inputs, ${holderOf("p")} AS holder FROM straggler.batch_progress p
   WHERE p.pipeline = $1 AND p.inputs IS NOT NULL ORDER BY p.batch_id DESC LIMIT 1
), other AS (
  SELECT (SELECT p.batch_id FROM straggler.batch_progress p, last
           WHERE p.pipeline = $1 AND p.batch_id < last.batch_id AND ${holderOf("p")} IS DISTINCT FROM last.holder
           ORDER BY p.batch_id DESC LIMIT 1) AS batch_id
)
SELECT last.batch_id::int, last.inputs, last.holder,
       (SELECT p.timestamp FROM straggler.batch_progress p, other
         WHERE p.pipeline = $1 AND p.batch_id > coalesce(other.batch_id, -1) ORDER BY p.batch_id LIMIT 1) AS since
  FROM last`;

/** @param policy the pipeline's `watermark.policy` */
export async function readWatermarkHolder(
  client: Queryable,
  pipeline: string,
  policy: "min" | "max",
): Promise<HolderRow | null> {
  const { rows } = await client.query<{
    batch_id: number;
    inputs: HolderInput[];
    holder: string | null;
    since: string | null;
  }>(prepared("read_watermark_holder", HOLDER_SQL, [pipeline, policy]));
  const r = rows[0];
  if (!r) return null;
  const inputs = r.inputs.map((i) => ({ input: i.input, watermark: i.watermark, idle: i.idle === true }));
  return { batchId: r.batch_id, inputs, holder: r.holder, since: r.since };
}
