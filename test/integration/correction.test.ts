import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { futureOutlier, lateWithinDelay, pipeline } from "../helpers/fixtures.js";
import { windowSummary, windows } from "../helpers/results.js";

const getDb = useTestDatabase();

async function landAndStream(pool: Pool, p: PipelineConfig, files: string[]): Promise<void> {
  for (const f of files) {
    await landFile(pool, p, path.join(p.source.landingDir!, f), f);
    await runBatch(pool, p, "once");
  }
}

describe("correction job", () => {
  it("seed late-within-delay: after file 3 a run sets [12:00,12:10) to 119, revision 2, corrected; a second run changes nothing", async () => {
    const { pool } = await getDb();
    const p = lateWithinDelay();
    await landAndStream(pool, p, ["1.json", "2.json", "3.json"]);
    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect(run.status).toBe("succeeded");
    expect([run.windowsExamined, run.windowsChanged, run.eventsRecovered]).toEqual([1, 1, 1]);
    const lateId = (
      await pool.query("SELECT event_id FROM straggler.bronze WHERE pipeline = $1 AND value = 100", [p.name])
    ).rows[0].event_id;
    expect(lateId).toBe("3.json:1");
    expect(run.changes).toEqual([
      {
        groupKey: "",
        windowStart: "2026-10-01T12:00:00.000Z",
        windowEnd: "2026-10-01T12:10:00.000Z",
        before: { count: 3, sum: "19", min: "4", max: "10" },
        after: { count: 4, sum: "119", min: "4", max: "100" },
        revision: 2,
        lateEventCount: 1,
        lateEventIds: ["3.json:1"],
      },
    ]);
    const w = (await windows(pool, p.name))[0]!;
    expect([w.value_sum, w.revision, w.status]).toEqual(["119", 2, "corrected"]);
    const audit = await pool.query(
      "SELECT sum_before, sum_after, late_event_ids, revision_before, revision_after FROM straggler.corrections WHERE run_id = $1",
      [run.runId],
    );
    expect(audit.rows).toEqual([
      { sum_before: "19", sum_after: "119", late_event_ids: ["3.json:1"], revision_before: 1, revision_after: 2 },
    ]);
    expect(
      (
        await pool.query("SELECT count(*)::int AS n FROM straggler.windows_awaiting_correction WHERE pipeline = $1", [
          p.name,
        ])
      ).rows[0].n,
    ).toBe(0);

    const again = await runCorrection(pool, p, { trigger: "cli" });
    expect([again.status, again.windowsExamined, again.windowsChanged, again.changes]).toEqual(["succeeded", 0, 0, []]);
    // A range run over everything re-examines every final window and still changes nothing.
    const ranged = await runCorrection(pool, p, {
      trigger: "api",
      range: { from: "2026-10-01T00:00:00Z", to: "2026-10-02T00:00:00Z" },
    });
    expect([ranged.windowsExamined, ranged.windowsChanged]).toEqual([3, 0]);
    const runs = await pool.query(
      "SELECT trigger, status, windows_examined, windows_changed FROM straggler.correction_runs WHERE pipeline = $1 ORDER BY run_id",
      [p.name],
    );
    expect(runs.rows).toEqual([
      { trigger: "cli", status: "succeeded", windows_examined: 1, windows_changed: 1 },
      { trigger: "cli", status: "succeeded", windows_examined: 0, windows_changed: 0 },
      { trigger: "api", status: "succeeded", windows_examined: 3, windows_changed: 0 },
    ]);
    const report = await reconcile(pool, p);
    expect([report.ok, report.mismatches, report.windowsChecked]).toEqual([true, [], 3]);
    expect(report.ledger).toEqual({ landed: 7, accepted: 7, quarantined: 0, landedBySource: 7, balanced: true });
  });

  it("seed future-outlier control run: the correction brings [12:00,12:10) to 5", async () => {
    const { pool } = await getDb();
    const p = futureOutlier(false);
    await landAndStream(pool, p, ["batch1.csv", "batch2.csv", "batch3.csv"]);
    const before = await reconcile(pool, p);
    expect(before.mismatches).toEqual([
      {
        groupKey: "",
        windowStart: "2026-09-19T12:00:00.000Z",
        windowEnd: "2026-09-19T12:10:00.000Z",
        stored: { count: 3, sum: "45", min: "10", max: "20" },
        expected: { count: 5, sum: "80", min: "5", max: "30" },
      },
    ]);
    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect(run.changes.map((c) => [c.after.count, c.lateEventIds])).toEqual([[5, ["5", "6"]]]);
    expect(await windowSummary(pool, p.name, "count")).toEqual(["[12:00,12:10)=5 corrected", "[14:00,14:10)=1 open"]);
    expect((await reconcile(pool, p)).ok).toBe(true);
  });

  it("exact decimals: amounts whose float sum drifts sum exactly in the stream and the correction reports no change", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "decimals",
      source: { landingDir: "unused", format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "0 seconds" },
      admission: { maxFractionDigits: 20 }, // 1e-20 and a 20-digit fraction: above the default 18
    });
    // 0.1 + 0.2 = 0.30000000000000004 in binary floats; ten 0.1s = 0.9999999999999999.
    const values = ["0.1", "0.2", ...Array(10).fill("0.1"), "1e-20", "12345678901234567890.12345678901234567890"];
    const body = values.map((v, i) => `{"id":"d${i}","t":"2026-10-01T12:0${i % 10}:00Z","v":${v}}`).join("\n");
    await landStream(pool, p, Readable.from([body]), "test");
    await landStream(pool, p, Readable.from(['{"id":"close","t":"2026-10-01T12:30:00Z","v":0}']), "test");
    await runBatch(pool, p, "once");
    await runBatch(pool, p, "once");
    const [w] = await windows(pool, p.name);
    expect([w!.value_sum, w!.event_count, w!.status]).toEqual([
      "12345678901234567891.42345678901234567891",
      14,
      "final",
    ]);
    const run = await runCorrection(pool, p, {
      trigger: "cli",
      range: { from: "2026-10-01T12:00:00Z", to: "2026-10-01T12:10:00Z" },
    });
    expect([run.windowsExamined, run.windowsChanged]).toEqual([1, 0]);
  });
});
