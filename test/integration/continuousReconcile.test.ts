/**
 * Continuous reconcile (docs/continuous-reconcile.md): a results row changed by hand is found by
 * the scheduled reconcile run, fires `reconcile_drift` (the webhook receives it), shows in
 * `straggler_reconcile_mismatched_windows`, and the next correction run puts it back and names
 * the reconcile run in its audit.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCorrection } from "../../src/correction/correct.js";
import { runRecordedReconcile } from "../../src/correction/reconcileRun.js";
import { scheduleReconciles } from "../../src/correction/reconcileSchedule.js";
import { landFile } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { startAlerts } from "../../src/observe/alerts.js";
import { createMetrics } from "../../src/observe/metrics.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline, seedDir } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (stops.length > 0) await stops.pop()!();
});

/** A webhook receiver keeping each body. */
async function receiver(): Promise<{ url: string; bodies: Record<string, unknown>[] }> {
  const bodies: Record<string, unknown>[] = [];
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      bodies.push(JSON.parse(text));
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  stops.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`, bodies };
}

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const gauge = (text: string, name: string) =>
  text.split("\n").filter((l) => l.startsWith(`straggler_reconcile_mismatched_windows{pipeline="${name}"}`));

describe("continuous reconcile", () => {
  it("a hand-changed final window: found by the scheduled run, alert fired to the webhook, corrected by the next correction run naming the reconcile run", async () => {
    const { pool } = await getDb();
    const hook = await receiver();
    const p = pipeline({
      name: "recon-drift",
      source: { landingDir: seedDir("late-within-delay"), format: "jsonl" },
      fields: { eventTime: "event_time", value: "amount" },
      timestamps: { format: "iso8601", timeZone: "UTC" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
      correction: { reconcile: { schedule: "* * * * *", sample: "all" } },
      alerts: { webhook: hook.url, dropShare: null, correctionFailed: false },
    });
    for (const f of ["1.json", "2.json"]) {
      await landFile(pool, p, path.join(p.source.landingDir!, f), f);
      await runBatch(pool, p, "once");
    }
    const lastSeq = (
      await pool.query("SELECT last_offset::int FROM straggler.checkpoints WHERE pipeline = $1", [p.name])
    ).rows[0].last_offset;
    // [12:00,12:10) is final at 19 (10 + 5 + 4) under the watermark 12:15; planted: 29.
    const planted = await pool.query(
      "UPDATE straggler.window_results_table SET value_sum = 29 WHERE pipeline = $1 AND window_start = '2026-10-01T12:00:00Z' AND is_final",
      [p.name],
    );
    expect(planted.rowCount).toBe(1);

    const log = createLogger("silent");
    const schedule = scheduleReconciles(pool, [p], log);
    stops.push(() => schedule.stop());
    const stopAlerts = startAlerts(pool, [p], log, { intervalMs: 200 });
    stops.push(stopAlerts);

    // The next minute's tick runs it (at most a minute away).
    const run = await until(
      "the scheduled reconcile run",
      async () =>
        (
          await pool.query(
            `SELECT run_id::int, trigger, sample, status, range_start, range_end, bronze_snapshot::int, watermark, windows_checked,
              windows_mismatched, windows_failed, ledger_balanced, error, cron_slot IS NOT NULL AS slotted
         FROM straggler.reconcile_runs WHERE pipeline = $1 AND status <> 'running'`,
            [p.name],
          )
        ).rows[0],
      90_000,
    );
    expect(run).toEqual({
      run_id: run.run_id,
      trigger: "cron",
      sample: "all",
      status: "succeeded",
      range_start: null,
      range_end: null,
      bronze_snapshot: lastSeq,
      watermark: "2026-10-01T12:15:00.000Z",
      windows_checked: 1,
      windows_mismatched: 1,
      windows_failed: 0,
      ledger_balanced: true,
      error: null,
      slotted: true,
    });
    // The pipeline page shows the last run.
    const api = await startApi({ pool, pipelines: [p], log: createLogger("silent"), token: undefined });
    stops.push(() => api.close());
    const page = await (await fetch(`${api.base}/ui/pipelines/${p.name}`)).text();
    expect(
      /<div class="stat" title="([^"]*)"><div class="label">last reconcile<\/div><div class="value" data-field="lastReconcile">([^<]*)<\/div>/
        .exec(page)
        ?.slice(1),
    ).toEqual([
      `run ${run.run_id} (cron), finished ${(await pool.query("SELECT finished_at FROM straggler.reconcile_runs WHERE run_id = $1", [run.run_id])).rows[0].finished_at}`,
      "1 of 1 mismatched",
    ]);
    const mismatches = await pool.query(
      "SELECT group_key, window_start, window_end, stored, expected, corrected_by FROM straggler.reconcile_mismatches WHERE pipeline = $1",
      [p.name],
    );
    expect(mismatches.rows).toEqual([
      {
        group_key: "",
        window_start: "2026-10-01T12:00:00.000Z",
        window_end: "2026-10-01T12:10:00.000Z",
        stored: { count: 3, sum: "29", min: "4", max: "10" },
        expected: { count: 3, sum: "19", min: "4", max: "10" },
        corrected_by: null,
      },
    ]);

    const fired = await until(
      "the firing webhook",
      async () => hook.bodies.find((b) => b.alert === "reconcile_drift" && b.state === "firing"),
      20_000,
    );
    expect(fired).toEqual({
      pipeline: p.name,
      alert: "reconcile_drift",
      state: "firing",
      since: fired.since,
      value: 1,
      threshold: 0,
      message: "1 final windows differ from bronze (found by reconcile); the next correction run recomputes them",
    });
    const metrics = createMetrics([p]);
    expect(gauge(await metrics.scrape(pool), p.name)).toEqual([
      `straggler_reconcile_mismatched_windows{pipeline="${p.name}"} 1`,
    ]);

    const correction = await runCorrection(pool, p, { trigger: "cli" });
    expect([correction.status, correction.windowsExamined, correction.windowsChanged]).toEqual(["succeeded", 1, 1]);
    expect(correction.changes).toEqual([
      {
        groupKey: "",
        windowStart: "2026-10-01T12:00:00.000Z",
        windowEnd: "2026-10-01T12:10:00.000Z",
        before: { count: 3, sum: "29", min: "4", max: "10" },
        after: { count: 3, sum: "19", min: "4", max: "10" },
        revision: 2,
        lateEventCount: 0,
        lateEventIds: [],
        reconcileRunId: run.run_id,
      },
    ]);
    const audit = await pool.query(
      "SELECT sum_before::text, sum_after::text, reconcile_run_id::int FROM straggler.correction_audit WHERE run_id = $1",
      [correction.runId],
    );
    expect(audit.rows).toEqual([{ sum_before: "29", sum_after: "19", reconcile_run_id: run.run_id }]);
    expect(
      (await pool.query("SELECT corrected_by::int FROM straggler.reconcile_mismatches WHERE pipeline = $1", [p.name]))
        .rows,
    ).toEqual([{ corrected_by: correction.runId }]);
    expect(gauge(await metrics.scrape(pool), p.name)).toEqual([
      `straggler_reconcile_mismatched_windows{pipeline="${p.name}"} 0`,
    ]);
    const resolved = await until(
      "the ok webhook",
      async () => hook.bodies.find((b) => b.alert === "reconcile_drift" && b.state === "ok"),
      20_000,
    );
    expect([resolved.value, resolved.message]).toEqual([
      0,
      "no final window found differing from bronze awaits correction",
    ]);

    // Checked again, the window agrees with bronze.
    const again = await runRecordedReconcile(pool, p, { trigger: "cli" });
    expect([again.status, again.windowsChecked, again.windowsMismatched, again.skipped]).toEqual([
      "succeeded",
      1,
      0,
      false,
    ]);
  }, 150_000);
});
