/**
 * Rebuild into a candidate (README "Incidents: hold, rebuild, cut over"): the
 * seed future-outlier story under the 1-hour guard, rebuilt from the ledger
 * beside the live version, with its diff; a timestamp zone fixed after every
 * row failed to parse.
 */
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
import { PolicyRefusedError } from "../../src/stream/policyGuard.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { futureOutlier, pipeline } from "../helpers/fixtures.js";
import { windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

async function controlRun(pool: Pool, p: PipelineConfig): Promise<void> {
  for (const file of ["batch1.csv", "batch2.csv", "batch3.csv"]) {
    await landFile(pool, p, path.join(p.source.landingDir!, file), file);
    await runBatch(pool, p, "once");
  }
}

describe("rebuild", () => {
  it("seed future-outlier: control 3 / 1; the 1-hour guard is refused; the rebuild's diff: [12:00,12:10) 3 → 5, [14:00,14:10) removed, row 4 accepted → FUTURE_TS; live untouched", async () => {
    const { pool } = await getDb();
    const control = futureOutlier(false, "rebuild-seed");
    await controlRun(pool, control);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
    const guarded = futureOutlier(true, "rebuild-seed");
    const refused = await runBatch(pool, guarded, "once").then(() => undefined, (e: unknown) => e);
    expect(refused).toBeInstanceOf(PolicyRefusedError);
    expect((refused as PolicyRefusedError).changes.map((c) => c.text)).toEqual(["admission.maxFutureSkew: null → 1 hour"]);

    const r = await rebuild(pool, guarded);
    expect([r.version, r.liveVersion, r.resumed, r.rowsClassified, r.windows]).toEqual([2, 1, false, 6, 1]);
    expect(r.checkpoint).toEqual({ batchId: 2, lastSeq: expect.any(Number), maxEventTime: "2026-09-19T12:08:00.000Z", watermark: "2026-09-19T12:03:00.000Z" });
    expect(r.reconcile).toEqual({ ok: true, windowsChecked: 1, mismatches: [], ledger: { landed: 6, accepted: 5, quarantined: 1, balanced: true } });
    expect(r.diff.windows).toEqual([
      { change: "changed", groupKey: "", windowStart: "2026-09-19T12:00:00.000Z", windowEnd: "2026-09-19T12:10:00.000Z", before: { count: 3, sum: "45", min: "10", max: "20" }, after: { count: 5, sum: "80", min: "5", max: "30" } },
      { change: "removed", groupKey: "", windowStart: "2026-09-19T14:00:00.000Z", windowEnd: "2026-09-19T14:10:00.000Z", before: { count: 1, sum: "25", min: "25", max: "25" }, after: null },
    ]);
    expect(r.diff.reclassified).toEqual([{ before: "accepted", after: "FUTURE_TS", rows: 1 }]);
    expect(r.diff.rows).toEqual([{ seq: expect.any(Number), eventId: "4", before: "accepted", after: "FUTURE_TS" }]);
    // The view lists the same diff; live results and bronze are untouched.
    const view = await pool.query("SELECT change, group_key, before_count, after_count FROM straggler.rebuild_diff WHERE pipeline = $1 AND version = 2 ORDER BY window_start", [control.name]);
    expect(view.rows).toEqual([{ change: "changed", group_key: "", before_count: 3, after_count: 5 }, { change: "removed", group_key: "", before_count: 1, after_count: null }]);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
    const states = await pool.query("SELECT version, state FROM straggler.results_versions WHERE pipeline = $1 ORDER BY version", [control.name]);
    expect(states.rows).toEqual([{ version: 1, state: "live" }, { version: 2, state: "candidate" }]);
    const byVersion = await pool.query("SELECT version, state, window_start, event_count, status FROM straggler.window_results_by_version WHERE pipeline = $1 ORDER BY version, window_start", [control.name]);
    expect(byVersion.rows.map((x) => `${x.version} ${x.state} ${x.window_start.slice(11, 16)} ${x.event_count} ${x.status}`)).toEqual(["1 live 12:00 3 final", "1 live 14:00 1 open", "2 candidate 12:00 5 open"]);
  });

  it("bronze's raw columns refuse an UPDATE (the trigger); its classification columns may change", async () => {
    const { pool } = await getDb();
    const p = futureOutlier(false, "rebuild-raw");
    await landFile(pool, p, path.join(p.source.landingDir!, "batch1.csv"), "batch1.csv");
    for (const set of ["raw = 'x'", "ingestion_time = now()", "event_id = 'x'", "source = 'x'", "source_line = 9", "landed_at = now()"]) {
      const e = await pool.query(`UPDATE straggler.bronze_events SET ${set} WHERE pipeline = $1`, [p.name]).then(() => undefined, (err: Error & { code?: string }) => err);
      expect([e?.code, e?.message.replace(/row \d+/, "row N")]).toEqual([
        "23000", "bronze row N of pipeline rebuild-raw: the raw columns (seq, pipeline, event_id, raw, ingestion_time, source, source_line, landed_at) never change",
      ]);
    }
    expect((await pool.query("UPDATE straggler.bronze_events SET reason = reason, status = status WHERE pipeline = $1", [p.name])).rowCount).toBe(2);
  });
});
