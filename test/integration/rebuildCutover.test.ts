/**
 * Rebuild and cut over under stress (README "Incidents: hold, rebuild, cut
 * over"): a timestamp zone fixed after every row failed to parse, rebuilt and
 * caught up without landing anything again; a rebuild killed half way by
 * SIGKILL; dashboards reading straggler.window_results while versions swap.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { cutover, CutoverRefusedError } from "../../src/lifecycle/cutover.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { futureOutlier, pipeline } from "../helpers/fixtures.js";
import { ledger, windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

async function streamAll(pool: Pool, p: PipelineConfig): Promise<void> {
  while ((await runBatch(pool, p, "once")) !== null);
}

describe("rebuild and cut over", () => {
  it("a timestamp zone missing (every row PARSE_FAIL), fixed, rebuilt and cut over: every row accepted, the right windows, a file landed since caught up, nothing landed again", async () => {
    const { pool } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-zone-"));
    writeFileSync(
      path.join(dir, "a.csv"),
      "id,t,v\n1,2026-03-02T12:01:00,10\n2,2026-03-02T12:05:00,20\n3,2026-03-02T12:12:00,5\n",
    );
    writeFileSync(path.join(dir, "b.csv"), "id,t,v\n4,2026-03-02T12:14:00,1\n");
    const raw = {
      name: "rebuild-zone",
      source: { landingDir: dir, format: "csv" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "5 minutes" },
    };
    const broken = pipeline({ ...raw, timestamps: { format: "iso8601" } });
    const fixed = pipeline({ ...raw, timestamps: { format: "iso8601", timeZone: "America/New_York" } });
    await landFile(pool, broken, path.join(dir, "a.csv"), "a.csv");
    await streamAll(pool, broken);
    expect(await ledger(pool, broken.name)).toEqual({ landed: 3, accepted: 0, quarantined: 3 });
    expect(await windowSummary(pool, broken.name)).toEqual([]);

    const r = await rebuild(pool, fixed);
    expect(r.diff.reclassified).toEqual([{ before: "PARSE_FAIL", after: "accepted", rows: 3 }]);
    expect(r.diff.windows.map((w) => `${w.change} ${w.windowStart.slice(11, 16)} ${w.after?.sum}`)).toEqual([
      "added 17:00 30",
      "added 17:10 5",
    ]);
    // A file lands after the rebuild (classified under the live policy: PARSE_FAIL); the cutover catches it up.
    await landFile(pool, broken, path.join(dir, "b.csv"), "b.csv");
    const cut = await cutover(pool, fixed, r.version);
    expect([cut.caughtUpRows, cut.windows, cut.checkpoint.maxEventTime, cut.checkpoint.watermark]).toEqual([
      1,
      2,
      "2026-03-02T17:14:00.000Z",
      "2026-03-02T17:09:00.000Z",
    ]);
    expect(await ledger(pool, fixed.name)).toEqual({ landed: 4, accepted: 4, quarantined: 0 });
    expect(await windowSummary(pool, fixed.name)).toEqual(["[17:00,17:10)=30 open", "[17:10,17:20)=6 open"]);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.landed_sources WHERE pipeline = $1", [fixed.name]))
        .rows[0].n,
    ).toBe(2);
    expect(await runBatch(pool, fixed, "once")).toBeNull();
  });

  it("a rebuild killed by SIGKILL half way leaves the live version untouched and cannot be cut over; run again, it continues and finishes", async () => {
    const { pool, url } = await getDb();
    const base = {
      name: "rebuild-kill",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "1 hour" },
      watermark: { delay: "10 minutes" },
    };
    const live = pipeline(base);
    // 6 000 events, one a second from 00:00; the rebuilt policy refuses the first 1 800 (before 00:30) as TOO_OLD.
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    const lines = Array.from({ length: 6000 }, (_, i) =>
      JSON.stringify({ id: i, t: new Date(t0 + i * 1000).toISOString(), v: 1 }),
    ).join("\n");
    await landStream(pool, live, Readable.from([lines]), "test", Date.parse("2026-01-01T06:00:00Z"));
    await streamAll(pool, live);
    const before = ["[00:00,01:00)=3600 final", "[01:00,02:00)=2400 open"];
    expect(await windowSummary(pool, live.name)).toEqual(before);
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-kill-"));
    const config = path.join(dir, "pipelines.yaml");
    writeFileSync(
      config,
      `pipelines:\n  - ${JSON.stringify({ ...base, admission: { minEventTime: "2026-01-01T00:30:00Z" } })}\n`,
    );
    const run = startCli(["-c", config, "rebuild", "-p", live.name, "--page-rows", "200"], { DATABASE_URL: url });
    const progress = async () =>
      (
        await pool.query(
          "SELECT status, done_seq::bigint AS done, ledger_seq::bigint AS upto, rows_done::int AS rows FROM straggler.rebuilds WHERE pipeline = $1",
          [live.name],
        )
      ).rows[0];
    let exited: Awaited<typeof run.done> | undefined;
    void run.done.then((r) => (exited = r));
    while (!((await progress())?.rows >= 600)) {
      if (exited)
        throw new Error(`rebuild exited before it was killed: ${exited.code}\n${exited.stdout}\n${exited.stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    run.child.kill("SIGKILL");
    const ended = await run.done;
    expect(ended.signal).toBe("SIGKILL");
    const stopped = await progress();
    expect(stopped.status).toBe("running");
    expect(stopped.rows).toBeGreaterThanOrEqual(600);
    expect(stopped.rows).toBeLessThan(6000);
    expect(await windowSummary(pool, live.name)).toEqual(before);
    await expect(
      cutover(pool, pipeline({ ...base, admission: { minEventTime: "2026-01-01T00:30:00Z" } }), 2),
    ).rejects.toBeInstanceOf(CutoverRefusedError);

    const again = startCli(["-c", config, "rebuild", "-p", live.name, "--json"], { DATABASE_URL: url });
    const done = await again.done;
    expect([done.code, done.stderr.split("\n")[0]]).toEqual([
      0,
      `rebuild-kill: continuing the rebuild of version 2 (${6000 - stopped.rows} rows left)`,
    ]);
    const report = JSON.parse(done.stdout);
    expect([report.version, report.resumed, report.rowsClassified, report.reconcile]).toEqual([
      2,
      true,
      6000 - stopped.rows,
      {
        ok: true,
        windowsChecked: 2,
        mismatches: [],
        ledger: { landed: 6000, accepted: 4200, quarantined: 1800, balanced: true },
      },
    ]);
    expect(report.diff.reclassified).toEqual([{ before: "accepted", after: "TOO_OLD", rows: 1800 }]);
    expect(
      report.diff.windows.map(
        (w: {
          change: string;
          windowStart: string;
          before: { count: number } | null;
          after: { count: number } | null;
        }) => `${w.change} ${w.windowStart.slice(11, 16)} ${w.before?.count} → ${w.after?.count}`,
      ),
    ).toEqual(["changed 00:00 3600 → 1800"]);
    expect(await windowSummary(pool, live.name)).toEqual(before);
  }, 180_000);

  it("cutover under load: dashboard queries on other connections see one version or the other, never a mix", async () => {
    const { pool } = await getDb();
    const control = futureOutlier(false, "rebuild-load");
    for (const file of ["batch1.csv", "batch2.csv", "batch3.csv"]) {
      await landFile(pool, control, path.join(control.source.landingDir!, file), file);
      await runBatch(pool, control, "once");
    }
    const guarded = futureOutlier(true, "rebuild-load");
    await rebuild(pool, guarded);
    const seen = new Map<string, number>();
    let cutting = true;
    const dashboard = async () => {
      while (cutting) {
        const { rows } = await pool.query(
          "SELECT sum(event_count)::int AS events, count(*)::int AS windows, min(results_version) AS lo, max(results_version) AS hi FROM straggler.window_results WHERE pipeline = $1",
          [control.name],
        );
        const k = JSON.stringify(rows[0]);
        seen.set(k, (seen.get(k) ?? 0) + 1);
      }
    };
    const readers = [dashboard(), dashboard(), dashboard()];
    for (let i = 0; i < 6; i++) await cutover(pool, i % 2 === 0 ? guarded : control, i % 2 === 0 ? 2 : 1);
    cutting = false;
    await Promise.all(readers);
    expect([...seen.keys()].sort()).toEqual([
      '{"events":4,"windows":2,"lo":1,"hi":1}',
      '{"events":5,"windows":1,"lo":2,"hi":2}',
    ]);
  });
});
