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
import { reconcile } from "../../src/correction/reconcile.js";
import { cutover, CutoverRefusedError } from "../../src/lifecycle/cutover.js";
import { holdPipeline, releasePipeline } from "../../src/lifecycle/hold.js";
import { dropVersion, rebuild } from "../../src/lifecycle/rebuild.js";
import { PolicyRefusedError } from "../../src/guards/index.js";
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
    const refused = await runBatch(pool, guarded, "once").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(PolicyRefusedError);
    expect((refused as PolicyRefusedError).changes.map((c) => c.text)).toEqual([
      "admission.maxFutureSkew: null → 1 hour",
    ]);

    const r = await rebuild(pool, guarded);
    expect([r.version, r.liveVersion, r.resumed, r.rowsClassified, r.windows]).toEqual([2, 1, false, 6, 1]);
    expect(r.checkpoint).toEqual({
      batchId: 2,
      lastSeq: expect.any(Number),
      maxEventTime: "2026-09-19T12:08:00.000Z",
      watermark: "2026-09-19T12:03:00.000Z",
      inputs: null,
    });
    expect(r.reconcile).toEqual({
      ok: true,
      windowsChecked: 1,
      mismatches: [],
      ledger: { landed: 6, accepted: 5, quarantined: 1, balanced: true },
    });
    expect(r.diff.windows).toEqual([
      {
        change: "changed",
        groupKey: "",
        windowStart: "2026-09-19T12:00:00.000Z",
        windowEnd: "2026-09-19T12:10:00.000Z",
        before: { count: 3, sum: "45", min: "10", max: "20" },
        after: { count: 5, sum: "80", min: "5", max: "30" },
      },
      {
        change: "removed",
        groupKey: "",
        windowStart: "2026-09-19T14:00:00.000Z",
        windowEnd: "2026-09-19T14:10:00.000Z",
        before: { count: 1, sum: "25", min: "25", max: "25" },
        after: null,
      },
    ]);
    expect(r.diff.reclassified).toEqual([{ before: "accepted", after: "FUTURE_TS", rows: 1 }]);
    expect(r.diff.rows).toEqual([{ seq: expect.any(Number), eventId: "4", before: "accepted", after: "FUTURE_TS" }]);
    // The view lists the same diff; live results and bronze are untouched.
    const view = await pool.query(
      "SELECT change, group_key, before_count, after_count FROM straggler.rebuild_diff WHERE pipeline = $1 AND version = 2 ORDER BY window_start",
      [control.name],
    );
    expect(view.rows).toEqual([
      { change: "changed", group_key: "", before_count: 3, after_count: 5 },
      { change: "removed", group_key: "", before_count: 1, after_count: null },
    ]);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
    const states = await pool.query(
      "SELECT version, state FROM straggler.results_versions WHERE pipeline = $1 ORDER BY version",
      [control.name],
    );
    expect(states.rows).toEqual([
      { version: 1, state: "live" },
      { version: 2, state: "candidate" },
    ]);
    const byVersion = await pool.query(
      "SELECT version, state, window_start, event_count, status FROM straggler.window_results_by_version WHERE pipeline = $1 ORDER BY version, window_start",
      [control.name],
    );
    expect(
      byVersion.rows.map((x) => `${x.version} ${x.state} ${x.window_start.slice(11, 16)} ${x.event_count} ${x.status}`),
    ).toEqual(["1 live 12:00 3 final", "1 live 14:00 1 open", "2 candidate 12:00 5 open"]);

    // Cut over: window_results shows 5 from version 2; version 1 stays queryable; the guarded stream goes on.
    const cut = await cutover(pool, guarded, 2);
    expect(cut).toEqual({
      pipeline: control.name,
      version: 2,
      previous: 1,
      rollback: false,
      caughtUpRows: 0,
      windows: 1,
      reclassifiedRows: 1,
      checkpoint: {
        batchId: 2,
        lastSeq: r.checkpoint.lastSeq,
        maxEventTime: "2026-09-19T12:08:00.000Z",
        watermark: "2026-09-19T12:03:00.000Z",
        inputs: null,
      },
    });
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=5 open"]);
    expect(
      (
        await pool.query("SELECT DISTINCT results_version FROM straggler.window_results WHERE pipeline = $1", [
          control.name,
        ])
      ).rows,
    ).toEqual([{ results_version: 2 }]);
    const afterCut = await pool.query(
      "SELECT version, state, window_start, event_count, status FROM straggler.window_results_by_version WHERE pipeline = $1 ORDER BY version, window_start",
      [control.name],
    );
    expect(
      afterCut.rows.map((x) => `${x.version} ${x.state} ${x.window_start.slice(11, 16)} ${x.event_count} ${x.status}`),
    ).toEqual(["1 retired 12:00 3 final", "1 retired 14:00 1 open", "2 live 12:00 5 open"]);
    const q = await pool.query("SELECT event_id, reason FROM straggler.quarantine WHERE pipeline = $1", [control.name]);
    expect(q.rows).toEqual([{ event_id: "4", reason: "FUTURE_TS" }]);
    expect(await runBatch(pool, guarded, "once")).toBeNull();
    expect(await reconcile(pool, guarded)).toMatchObject({
      ok: true,
      mismatches: [],
      ledger: { landed: 6, accepted: 5, quarantined: 1, balanced: true },
    });

    // Roll back: 3 and 1 again, from version 1 (its rows dropped by the watermark still await correction); the guarded config is refused again.
    const back = await cutover(pool, control, 1);
    expect([back.version, back.previous, back.rollback, back.windows, back.checkpoint.watermark]).toEqual([
      1,
      2,
      true,
      2,
      "2026-09-19T13:55:00.000Z",
    ]);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.late_windows WHERE pipeline = $1", [control.name]))
        .rows[0].n,
    ).toBe(1);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.quarantine WHERE pipeline = $1", [control.name]))
        .rows[0].n,
    ).toBe(0);
    await expect(runBatch(pool, guarded, "once")).rejects.toBeInstanceOf(PolicyRefusedError);
    // And forward again: version 2 was kept.
    expect((await cutover(pool, guarded, 2)).windows).toBe(1);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=5 open"]);
  });

  it("cutover refuses a version that is live, unknown, or whose rebuild is not complete; --drop removes a version that is not live", async () => {
    const { pool } = await getDb();
    const control = futureOutlier(false, "rebuild-refusals");
    await controlRun(pool, control);
    const refusal = (run: Promise<unknown>) =>
      run.then(
        () => undefined,
        (e: unknown) => [(e as CutoverRefusedError).name, (e as CutoverRefusedError).status, (e as Error).message],
      );
    expect(await refusal(cutover(pool, control, 1))).toEqual([
      "CutoverRefusedError",
      409,
      "version 1 of pipeline rebuild-refusals is live already",
    ]);
    expect(await refusal(cutover(pool, control, 7))).toEqual([
      "CutoverRefusedError",
      404,
      "pipeline rebuild-refusals has no version 7",
    ]);
    const guarded = futureOutlier(true, "rebuild-refusals");
    // A rebuild stopped after its first page (of 2 rows) is not complete.
    let pages = 0;
    const stopped = await rebuild(pool, guarded, {
      pageRows: 2,
      onProgress: () => {
        if (++pages === 1) throw new Error("stopped");
      },
    }).then(
      () => undefined,
      (e: Error) => e.message,
    );
    expect(stopped).toBe("stopped");
    const seqs = (
      await pool.query(
        "SELECT array_agg(seq::int ORDER BY seq) AS s FROM straggler.bronze_events WHERE pipeline = $1",
        [control.name],
      )
    ).rows[0].s as number[];
    expect(await refusal(cutover(pool, guarded, 2))).toEqual([
      "CutoverRefusedError",
      409,
      `version 2 of pipeline rebuild-refusals is not complete: its rebuild stopped at seq ${seqs[1]} of ${seqs[5]}; run \`straggler rebuild -p rebuild-refusals\` to finish it`,
    ]);
    const finished = await rebuild(pool, guarded, { pageRows: 2 });
    expect([finished.version, finished.resumed, finished.rowsClassified, finished.reconcile.ok]).toEqual([
      2,
      true,
      4,
      true,
    ]);
    expect(finished.diff.reclassified).toEqual([{ before: "accepted", after: "FUTURE_TS", rows: 1 }]);
    await expect(dropVersion(pool, control.name, 1)).rejects.toThrow(
      "version 1 of pipeline rebuild-refusals is live; cut over to another version first",
    );
    await dropVersion(pool, control.name, 2);
    const left = await pool.query(
      `SELECT (SELECT count(*)::int FROM straggler.policy_versions WHERE pipeline = $1) AS versions, (SELECT count(*)::int FROM straggler.event_classifications WHERE pipeline = $1) AS rows,
              (SELECT count(*)::int FROM straggler.rebuild_diff WHERE pipeline = $1) AS diff`,
      [control.name],
    );
    expect(left.rows).toEqual([{ versions: 1, rows: 0, diff: 0 }]);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
  });

  it("bronze's raw columns refuse an UPDATE (the trigger); its classification columns may change", async () => {
    const { pool } = await getDb();
    const p = futureOutlier(false, "rebuild-raw");
    await landFile(pool, p, path.join(p.source.landingDir!, "batch1.csv"), "batch1.csv");
    for (const set of [
      "raw = 'x'",
      "raw_rest = 'x'",
      "ingestion_time = now()",
      "event_id = 'x'",
      "source_id = source_id + 1",
      "source_line = 9",
      "landed_at = now()",
    ]) {
      const e = await pool.query(`UPDATE straggler.bronze_events SET ${set} WHERE pipeline = $1`, [p.name]).then(
        () => undefined,
        (err: Error & { code?: string }) => err,
      );
      expect([e?.code, e?.message.replace(/row \d+/, "row N")]).toEqual([
        "23000",
        "bronze row N of pipeline rebuild-raw: the raw columns (seq, pipeline, event_id, raw, raw_rest, raw_at, ingestion_time, source_id, source_line, landed_at) never change",
      ]);
    }
    expect(
      (
        await pool.query("UPDATE straggler.bronze_events SET reason = reason, status = status WHERE pipeline = $1", [
          p.name,
        ])
      ).rowCount,
    ).toBe(2);
  });

  it("dedupe gives what ingest gives: the issue's amended order under latest (17.00) rebuilds to the same; under first to 15.00 with one AMENDED_DUPLICATE", async () => {
    const { pool } = await getDb();
    const orders = (dedupe: "first" | "latest") =>
      pipeline({
        name: "rebuild-dedupe",
        source: { format: "jsonl" },
        fields: { eventId: "id", eventTime: "t", value: "v" },
        window: { type: "tumbling", size: "10 minutes" },
        watermark: { delay: "10 minutes" },
        admission: { dedupe, maxFutureSkew: null },
      });
    const latest = orders("latest");
    const land = (...lines: string[]) => landStream(pool, latest, Readable.from([lines.join("\n") + "\n"]), "http");
    await land('{"id":"A-1","t":"2026-10-01T12:01:00Z","v":10.00}', '{"id":"A-2","t":"2026-10-01T12:02:00Z","v":5.00}');
    await land('{"id":"A-1","t":"2026-10-01T12:01:00Z","v":12.00}', '{"id":"A-2","t":"2026-10-01T12:02:00Z","v":5.0}');
    await runBatch(pool, latest, "once");
    expect(await windowSummary(pool, latest.name)).toEqual(["[12:00,12:10)=17.00 open"]);

    const same = await rebuild(pool, latest);
    expect([same.diff.windows, same.diff.reclassified, same.reconcile.ok]).toEqual([[], [], true]);
    const first = await rebuild(pool, orders("first"));
    expect(first.version).toBe(3);
    expect(first.diff.windows.map((w) => `${w.change} ${w.before?.sum} → ${w.after?.sum}`)).toEqual([
      "changed 17.00 → 15.00",
    ]);
    expect(first.diff.reclassified).toEqual([
      { before: "SUPERSEDED", after: "accepted", rows: 1 },
      { before: "accepted", after: "AMENDED_DUPLICATE", rows: 1 },
    ]);
    expect(first.diff.rows.map((x) => `${x.eventId} ${x.before} → ${x.after}`)).toEqual([
      "A-1 SUPERSEDED → accepted",
      "A-1 accepted → AMENDED_DUPLICATE",
    ]);
    await cutover(pool, orders("first"), 3);
    expect(await windowSummary(pool, latest.name)).toEqual(["[12:00,12:10)=15.00 open"]);
    expect(
      (
        await pool.query("SELECT event_id, reason FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq", [
          latest.name,
        ])
      ).rows,
    ).toEqual([
      { event_id: "A-1", reason: "AMENDED_DUPLICATE" },
      { event_id: "A-2", reason: "DUPLICATE" },
    ]);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.amendments WHERE pipeline = $1", [latest.name]))
        .rows[0].n,
    ).toBe(0);
  });

  it("a hold applies on top of whatever is live: a cutover during a hold is published by the release", async () => {
    const { pool } = await getDb();
    const control = futureOutlier(false, "rebuild-held");
    await controlRun(pool, control);
    const guarded = futureOutlier(true, "rebuild-held");
    await rebuild(pool, guarded);
    await holdPipeline(pool, control.name, "future-dated events under investigation");
    await cutover(pool, guarded, 2);
    const held = await pool.query(
      "SELECT window_start, event_count, held FROM straggler.window_results WHERE pipeline = $1 ORDER BY window_start",
      [control.name],
    );
    expect(held.rows.map((x) => `${x.window_start.slice(11, 16)} ${x.event_count} ${x.held}`)).toEqual([
      "12:00 3 true",
      "14:00 1 true",
    ]);
    await releasePipeline(pool, control.name);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=5 open"]);
  });
});
