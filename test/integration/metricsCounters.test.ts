/**
 * `/metrics` as Prometheus reads it: `promtool check metrics` passes on a real scrape; counters
 * never go down (a running correction run is a gauge, archived rows still count); the correction
 * backlog is the windows awaiting correction.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { createMetrics } from "../../src/observe/metrics.js";
import { runArchive } from "../../src/retention/archive.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { runUntilCaughtUp } from "../../src/stream/streamLoop.js";
import { startApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { retentionPipeline } from "../helpers/retention.js";

const getDb = useTestDatabase();
const log = createLogger("silent");

/** Prometheus text as `name{labels}` → value, for the names starting `straggler_` (labels as printed). */
function parse(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (!line.startsWith("straggler_") || line.startsWith("straggler_http_")) continue;
    const i = line.lastIndexOf(" ");
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

/** `promtool check metrics` on `text`: its exit status and what it printed. */
function promtoolCheck(text: string): { status: number | null; output: string } {
  const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  if (r.error) throw new Error(`promtool could not be run (Debian: apt-get install prometheus): ${r.error.message}`);
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

const line = (events: [string, number][]) =>
  events.map(([t, amount]) => JSON.stringify({ event_time: t, amount })).join("\n") + "\n";

describe("metrics as Prometheus reads them", () => {
  it("a scrape after a workload passes promtool check metrics, with no nodejs_*_total gauge", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "linted",
      source: { format: "jsonl" },
      fields: { eventTime: "event_time", value: "amount" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
    });
    const token = "test-token-0123456789abcdef";
    const api = await startApi({ pool, pipelines: [p], log, token });
    try {
      const post = (body: string) =>
        fetch(`${api.base}/pipelines/linted/events`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/x-ndjson" },
          body,
        });
      expect(
        (
          await post(
            line([
              ["2026-10-01T12:01:00Z", 1],
              ["2026-10-01T12:31:00Z", 2],
            ]) + '{"event_time":"never"}\n',
          )
        ).status,
      ).toBe(201);
      await runBatch(pool, p, "once");
      const text = await (await fetch(`${api.base}/metrics`)).text();
      expect(promtoolCheck(text)).toEqual({ status: 0, output: "" });
      const names = [
        ...new Set(
          text
            .split("\n")
            .filter((l) => l.startsWith("# TYPE "))
            .map((l) => l.split(" ")[2]!),
        ),
      ];
      expect(names.filter((n) => n.startsWith("nodejs_active_"))).toEqual([
        "nodejs_active_resources",
        "nodejs_active_handles",
        "nodejs_active_requests",
      ]);
      expect(names.filter((n) => n.startsWith("straggler_")).sort()).toEqual([
        "straggler_alert_firing",
        "straggler_backlog_rows",
        "straggler_correction_backlog_windows",
        "straggler_correction_runs_running",
        "straggler_correction_runs_total",
        "straggler_correction_windows_changed_total",
        "straggler_dropped_pairs_total",
        "straggler_http_request_duration_seconds",
        "straggler_http_requests_total",
        "straggler_input_idle",
        "straggler_ledger_accepted_rows",
        "straggler_ledger_quarantined_rows",
        "straggler_log_offset",
        "straggler_max_event_time_lag_seconds",
        "straggler_max_event_time_seconds",
        "straggler_open_windows",
        "straggler_pipeline_held",
        "straggler_pipeline_owned",
        "straggler_reconcile_mismatched_windows",
        "straggler_replica_owned_pipelines",
        "straggler_rows_landed_total",
        "straggler_stream_batch_duration_seconds",
        "straggler_stream_batches_total",
        "straggler_stream_input_rows_total",
        "straggler_watermark_holder",
        "straggler_watermark_holder_behind_seconds",
        "straggler_watermark_holder_since_seconds",
        "straggler_watermark_lag_seconds",
        "straggler_watermark_seconds",
      ]);
      // The checker does refuse what it should: the gauge prom-client names like a counter.
      expect(
        promtoolCheck(
          "# HELP nodejs_active_handles_total x\n# TYPE nodejs_active_handles_total gauge\nnodejs_active_handles_total 3\n",
        ),
      ).toEqual({
        status: 3,
        output: 'nodejs_active_handles_total non-counter metrics should not have "_total" suffix\n',
      });
    } finally {
      await api.close();
    }
  });

  it("a running correction run is a gauge; finished runs count by status; the backlog is the windows awaiting correction", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "runs",
      source: { format: "jsonl" },
      fields: { eventTime: "event_time", value: "amount" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
    });
    const metrics = createMetrics([p]);
    const scrape = async () => parse(await metrics.scrape(pool));
    const dir = mkdtempSync(path.join(os.tmpdir(), "straggler-runs-"));
    const land = async (name: string, events: [string, number][]) => {
      writeFileSync(path.join(dir, name), line(events));
      await landFile(pool, p, path.join(dir, name), name);
      await runBatch(pool, p, "once");
    };
    // 12:31 moves the watermark to 12:21: [12:00, 12:10) and [12:10, 12:20) are final; 12:02 and 12:05 then land late in the first, 12:15 in the second.
    await land("1.jsonl", [
      ["2026-10-01T12:01:00Z", 1],
      ["2026-10-01T12:31:00Z", 2],
    ]);
    await land("2.jsonl", [
      ["2026-10-01T12:02:00Z", 3],
      ["2026-10-01T12:05:00Z", 4],
      ["2026-10-01T12:15:00Z", 5],
    ]);
    const l = '{pipeline="runs"}';
    const late = Number(
      (await pool.query("SELECT count(*) FROM straggler.late_windows WHERE pipeline = 'runs'")).rows[0].count,
    );
    expect(late).toBe(2);
    const before = await scrape();
    const runsTotal = (m: Record<string, number>) =>
      Object.fromEntries(Object.entries(m).filter(([k]) => k.startsWith("straggler_correction_runs_total")));
    // Every finished status is there from the start, so Prometheus's increase() sees the first failure.
    const none = {
      'straggler_correction_runs_total{pipeline="runs",status="succeeded"}': 0,
      'straggler_correction_runs_total{pipeline="runs",status="failed"}': 0,
      'straggler_correction_runs_total{pipeline="runs",status="abandoned"}': 0,
    };
    expect([
      before[`straggler_correction_backlog_windows${l}`],
      before[`straggler_correction_runs_running${l}`],
      runsTotal(before),
    ]).toEqual([2, 0, none]);

    const { rows } = await pool.query(
      "INSERT INTO straggler.correction_runs (pipeline, trigger, status, lease_until) VALUES ('runs', 'api', 'running', now() + interval '1 minute') RETURNING run_id",
    );
    const running = await scrape();
    expect([running[`straggler_correction_runs_running${l}`], runsTotal(running)]).toEqual([1, none]);
    await pool.query(
      "UPDATE straggler.correction_runs SET status = 'succeeded', finished_at = now(), windows_changed = 0 WHERE run_id = $1",
      [rows[0].run_id],
    );
    const finished = await scrape();
    expect([finished[`straggler_correction_runs_running${l}`], runsTotal(finished)]).toEqual([
      0,
      { ...none, 'straggler_correction_runs_total{pipeline="runs",status="succeeded"}': 1 },
    ]);
  });

  it("row counts stay the same when bronze's partition is archived (the archive's counts are added)", async () => {
    const { pool } = await getDb();
    const HOUR = 3_600_000,
      DAY = 24 * HOUR;
    const iso = (ms: number) => new Date(ms).toISOString();
    const now = new Date();
    const m2 = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1);
    const m1 = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1);
    const work = mkdtempSync(path.join(os.tmpdir(), "straggler-archived-metrics-"));
    const landing = path.join(work, "landing");
    mkdirSync(landing);
    const p = retentionPipeline(landing, path.join(work, "archive"), "archived");
    await pool.query("SELECT straggler.ensure_bronze_partitions($1::date, $2::date)", [
      iso(m2).slice(0, 10),
      iso(m1).slice(0, 10),
    ]);
    // Day 0 falls in the month before last (archived), days 20-29 in last month (kept: within the 10-day horizon); one row without an event time.
    const days = [0, 20, 29];
    const events = days.flatMap((d) =>
      [1, 2].map((j) =>
        JSON.stringify({ id: `e-${d}-${j}`, t: iso(m1 - 15 * DAY + d * DAY + j * HOUR), k: "a", v: d }),
      ),
    );
    writeFileSync(
      path.join(landing, "month.jsonl"),
      [...events, JSON.stringify({ id: "no-ts", k: "a", v: 1 })].join("\n") + "\n",
    );
    await landFile(pool, p, path.join(landing, "month.jsonl"), "month.jsonl");
    await backdate(pool, p.name, iso(m1 - 14 * DAY));
    await runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");
    const metrics = createMetrics([p]);
    const counts = async () => {
      const m = parse(await metrics.scrape(pool));
      return Object.fromEntries(Object.entries(m).filter(([k]) => /^straggler_(rows_landed_total|ledger_)/.test(k)));
    };
    const expected = {
      'straggler_rows_landed_total{pipeline="archived"}': 7,
      'straggler_ledger_accepted_rows{pipeline="archived"}': 6,
      'straggler_ledger_quarantined_rows{pipeline="archived",reason="NULL_TS"}': 1,
    };
    expect(await counts()).toEqual(expected);
    const run = await runArchive(pool, [p], { includeRestored: false });
    expect(run.archived.map((a) => a.rows)).toEqual([3]);
    expect(
      Number(
        (await pool.query("SELECT count(*) FROM straggler.bronze_events WHERE pipeline = 'archived'")).rows[0].count,
      ),
    ).toBe(4);
    expect(await counts()).toEqual(expected);
  });
});

/** Sets each row's landed_at as if it had landed 5 minutes after its event time (`fallback` for rows without one), so its partition is its event month. */
async function backdate(pool: Pool, name: string, fallback: string): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query("SET session_replication_role = replica"); // the bronze_raw_unchanged trigger stays off for this session's statement
    await c.query(
      "UPDATE straggler.bronze_events SET landed_at = coalesce(event_time, $2::timestamptz) + interval '5 minutes' WHERE pipeline = $1",
      [name, fallback],
    );
    await c.query("RESET session_replication_role");
  } finally {
    c.release();
  }
}
