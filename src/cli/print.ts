/** How the CLI prints a landing, a micro-batch and a pipeline's summary. */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Database } from "../db/open.js";
import type { LandResult } from "../ingest/copyToBronze.js";
import type { BatchProgress } from "../stream/runBatch.js";
import { pipelineStatus } from "../stream/status.js";

export function printLand(r: LandResult): void {
  const reasons = Object.entries(r.byReason).map(([k, v]) => `${k}=${v}`).join(" ");
  console.log(
    r.alreadyLanded
      ? `${r.pipeline}: ${r.source} already landed; skipped`
      : `${r.pipeline}: ${r.source}: landed ${r.landed}, accepted ${r.accepted}, quarantined ${r.quarantined}${reasons ? ` (${reasons})` : ""}`,
  );
}

export function printBatch(b: BatchProgress): void {
  console.log(
    `${b.pipeline} batch ${b.batchId}: ${b.numInputRows} rows in ${b.durationMs} ms (${Math.round(b.processedRowsPerSecond ?? 0)} rows/s), ` +
      `watermark ${b.nextWatermark ?? "undefined"}, numRowsDroppedByWatermark ${b.numRowsDroppedByWatermark}, ` +
      `numRowsUpdated ${b.numRowsUpdated}, finalized ${b.numRowsFinalized}, numRowsTotal ${b.numRowsTotal}`,
  );
}

/** A group key as the CLI prints it: `(null)` for the null group, `""` for the empty key. */
export function keyLabel(key: string | null): string {
  return key === null ? "(null)" : key === "" ? "\"\"" : key;
}

/** The summary block of `replay`: `extra` lines first, then the pipeline's ledger, windows and checkpoint. */
export async function printSummary(db: Database, pipeline: PipelineConfig, extra: Record<string, unknown> = {}): Promise<void> {
  const s = await pipelineStatus(db.pool, pipeline.name);
  const reasons = Object.entries(s.ledger.quarantinedByReason).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
  const lines = [
    `Summary for ${pipeline.name}`,
    ...Object.entries(extra).map(([k, v]) => `  ${k}: ${v}`),
    `  rows landed:              ${s.ledger.landed}`,
    `  accepted:                 ${s.ledger.accepted}`,
    `  quarantined:              ${s.ledger.quarantined} (${reasons})`,
    `  dropped by watermark:     ${s.numRowsDroppedByWatermark} (event, window) pairs, in ${s.windows.awaitingCorrection} windows awaiting correction`,
    `  windows open / final:     ${s.windows.open} / ${s.windows.final}${s.windows.corrected ? ` (+${s.windows.corrected} corrected)` : ""}`,
    `  final watermark:          ${s.checkpoint?.watermark ?? "undefined"}`,
    `  stream batches:           ${s.checkpoint ? s.checkpoint.batchId + 1 : 0}`,
  ];
  console.log(lines.join("\n"));
}
