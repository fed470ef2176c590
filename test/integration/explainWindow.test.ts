import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCorrection } from "../../src/correction/correct.js";
import { landFile } from "../../src/ingest/landFile.js";
import { explainWindow } from "../../src/observe/explain.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { lateWithinDelay } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

describe("explain a tumbling window (seed late-within-delay)", () => {
  it("shows micro-batch 0 → 15 open, micro-batch 1 → 19 final, correction run 1 → 119 recovering the 12:03 event", async () => {
    const { pool } = await getDb();
    const p = lateWithinDelay();
    for (const file of ["1.json", "2.json", "3.json"]) {
      await landFile(pool, p, path.join(p.source.landingDir!, file), file);
      await runBatch(pool, p, "once");
    }
    await runCorrection(pool, p, { trigger: "cli" });
    const x = await explainWindow(pool, p, "2026-10-01T12:00:00Z");
    console.log(JSON.stringify(x, null, 2));
  });
});
