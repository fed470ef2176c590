/** The retention tests' pipeline (test/integration/retention*.test.ts). */
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { pipeline } from "./fixtures.js";

/** JSON lines `{ id, t, k, v }` from `dir`, 1-day tumbling windows, 1-hour delay, a 10-day correction horizon archiving to `archive`. */
export function retentionPipeline(dir: string, archive: string, name = "ret"): PipelineConfig {
  return pipeline({
    name,
    source: { landingDir: dir, format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", groupKey: "k", value: "v" },
    window: { type: "tumbling", size: "1 day" },
    watermark: { delay: "1 hour" },
    retention: { correctionHorizon: "10 days", archive },
  });
}
