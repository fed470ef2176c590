/**
 * `/metrics` after a known workload, every listed metric checked against the database;
 * alerts firing and clearing, their webhook received by a local HTTP receiver.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { evaluateAlerts } from "../../src/observe/alerts.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { runCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline, servicePipelineYaml } from "../helpers/fixtures.js";
import { waitFor } from "../helpers/service.js";

const getDb = useTestDatabase();
const TOKEN = "test-token-0123456789abcdef";
const log = createLogger("silent");
const closing: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closing) await close();
});

/** A webhook receiver on 127.0.0.1 that answers 503 to its first POST (so a retry is needed), then 204. */
async function startReceiver(): Promise<{ url: string; received: Record<string, unknown>[]; attempts: () => number }> {
  const received: Record<string, unknown>[] = [];
  let attempts = 0;
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      attempts++;
      if (attempts === 1) return void res.writeHead(503).end();
      received.push(JSON.parse(body));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closing.push(() => new Promise((r) => server.close(() => r())));
  const a = server.address();
  return {
    url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/hook`,
    received,
    attempts: () => attempts,
  };
}

/** Prometheus text as `name{labels}` → value (labels as printed). */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

const line = (events: [string, number][]) =>
  events.map(([t, amount]) => JSON.stringify({ event_time: t, amount })).join("\n") + "\n";

describe("metrics and alerts", () => {
  it("reports the database's figures and the requests; alerts fire, clear and reach the webhook", async () => {
    const { pool } = await getDb();
    const receiver = await startReceiver();
    const orders = pipeline({
      name: "observed",
      source: { format: "jsonl" },
      fields: { eventTime: "event_time", value: "amount" },
      timestamps: { format: "iso8601" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
      alerts: {
        webhook: receiver.url,
        backlog: { above: 2 },
        quarantineShare: { above: "50%", batches: 5 },
        watermarkStalled: { for: "1 hour" },
      },
    });
    const api: RunningApi = await startApi({ pool, pipelines: [orders], log, token: TOKEN });
    closing.unshift(api.close);
    const auth = { authorization: `Bearer ${TOKEN}` };
    const post = async (body: string) => {
      const r = await fetch(`${api.base}/pipelines/observed/events`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/x-ndjson" },
        body,
      });
      expect(r.status).toBe(201);
    };
    const scrape = async () => {
      const r = await fetch(`${api.base}/metrics`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
      return parse(await r.text());
    };
    const alerts = async () => (await evaluateAlerts(pool, orders, log)).map((c) => `${c.alert} ${c.state} ${c.value}`);

    // Batch 1: four on time and one bad timestamp. Batch 2: one late past the watermark (12:21), one on time.
    await post(
      line([
        ["2026-10-01T12:01:00Z", 1],
        ["2026-10-01T12:05:00Z", 2],
        ["2026-10-01T12:15:00Z", 3],
        ["2026-10-01T12:31:00Z", 4],
      ]) + '{"event_time":"not a time","amount":5}\n',
    );
    await runBatch(pool, orders, "once");
    expect(await alerts()).toEqual([]);
    await post(
      line([
        ["2026-10-01T12:02:00Z", 6],
        ["2026-10-01T12:25:00Z", 7],
      ]),
    );
    await runBatch(pool, orders, "once");
    const dropShare = 1 / 6; // one dropped pair over the 6 accepted rows the two batches read
    expect(await alerts()).toEqual([`drop_share firing ${dropShare}`]);
    // Three rows the stream has not read: backlog 3 > 2.
    await post(
      line([
        ["2026-10-01T12:41:00Z", 8],
        ["2026-10-01T12:42:00Z", 9],
        ["2026-10-01T12:43:00Z", 10],
      ]),
    );
    expect(await alerts()).toEqual(["backlog firing 3"]);
    const run = await fetch(`${api.base}/pipelines/observed/recompute`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: "{}",
    });
    expect(run.status).toBe(200);

    const m = await scrape();
    const q = async (text: string) => Number(Object.values((await pool.query(text, ["observed"])).rows[0])[0]);
    const reasons = (
      await pool.query(
        "SELECT reason, count(*)::int AS n FROM straggler.quarantine WHERE pipeline = $1 GROUP BY reason",
        ["observed"],
      )
    ).rows;
    expect(reasons).toHaveLength(1);
    const cp = (
      await pool.query(
        "SELECT extract(epoch FROM watermark)::float8 AS w, extract(epoch FROM max_event_time)::float8 AS e FROM straggler.checkpoints WHERE pipeline = $1",
        ["observed"],
      )
    ).rows[0];
    const l = '{pipeline="observed"}';
    const expected: Record<string, number> = {
      [`straggler_rows_landed_total${l}`]: await q("SELECT landed FROM straggler.ledger WHERE pipeline = $1"),
      [`straggler_ledger_accepted_rows${l}`]: await q("SELECT accepted FROM straggler.ledger WHERE pipeline = $1"),
      [`straggler_ledger_quarantined_rows{pipeline="observed",reason="${reasons[0].reason}"}`]: reasons[0].n,
      [`straggler_stream_batches_total${l}`]: await q(
        "SELECT count(*) FROM straggler.stream_progress WHERE pipeline = $1",
      ),
      [`straggler_stream_input_rows_total${l}`]: await q(
        "SELECT sum(num_input_rows) FROM straggler.stream_progress WHERE pipeline = $1",
      ),
      [`straggler_dropped_pairs_total${l}`]: await q(
        "SELECT sum(num_rows_dropped_by_watermark) FROM straggler.stream_progress WHERE pipeline = $1",
      ),
      [`straggler_watermark_seconds${l}`]: cp.w,
      [`straggler_max_event_time_seconds${l}`]: cp.e,
      [`straggler_open_windows${l}`]: await q(
        "SELECT count(*) FROM straggler.window_results WHERE pipeline = $1 AND status = 'open'",
      ),
      [`straggler_backlog_rows${l}`]: 3,
      [`straggler_correction_runs_total{pipeline="observed",status="succeeded"}`]: 1,
      [`straggler_correction_runs_running${l}`]: 0,
      [`straggler_correction_backlog_windows${l}`]: await q(
        "SELECT count(*) FROM straggler.late_windows WHERE pipeline = $1",
      ),
      [`straggler_correction_windows_changed_total${l}`]: await q(
        "SELECT sum(windows_changed) FROM straggler.correction_history WHERE pipeline = $1",
      ),
      [`straggler_stream_batch_duration_seconds_count${l}`]: 2,
      [`straggler_stream_batch_duration_seconds_sum${l}`]:
        (await q("SELECT sum(duration_ms) FROM straggler.stream_progress WHERE pipeline = $1")) / 1000,
      [`straggler_stream_batch_duration_seconds_bucket{pipeline="observed",le="0.1"}`]: await q(
        "SELECT count(*) FROM straggler.stream_progress WHERE pipeline = $1 AND duration_ms <= 100",
      ),
      [`straggler_stream_batch_duration_seconds_bucket{pipeline="observed",le="+Inf"}`]: 2,
      [`straggler_alert_firing{pipeline="observed",alert="drop_share"}`]: 1,
      [`straggler_alert_firing{pipeline="observed",alert="backlog"}`]: 1,
      [`straggler_alert_firing{pipeline="observed",alert="quarantine_share"}`]: 0,
      [`straggler_alert_firing{pipeline="observed",alert="correction_failed"}`]: 0,
      [`straggler_http_requests_total{method="POST",route="/pipelines/:pipeline/events",status="201"}`]: 3,
      [`straggler_http_request_duration_seconds_count{method="POST",route="/pipelines/:pipeline/events",status="201"}`]: 3,
      [`straggler_http_requests_total{method="POST",route="/pipelines/:pipeline/recompute",status="200"}`]: 1,
    };
    for (const [key, value] of Object.entries(expected)) expect([key, m.get(key)]).toEqual([key, value]);
    // The workload's own figures, as worked out by hand.
    expect([
      m.get(`straggler_rows_landed_total${l}`),
      m.get(`straggler_ledger_accepted_rows${l}`),
      m.get(`straggler_dropped_pairs_total${l}`),
    ]).toEqual([10, 9, 1]);
    expect(m.get(`straggler_watermark_seconds${l}`)).toBe(Date.parse("2026-10-01T12:21:00Z") / 1000);
    expect(m.get(`straggler_correction_windows_changed_total${l}`)).toBe(1);
    const lag = m.get(`straggler_watermark_lag_seconds${l}`)!;
    expect(Math.abs(lag - (Date.now() / 1000 - cp.w))).toBeLessThan(60);
    expect(m.get(`straggler_max_event_time_lag_seconds${l}`)! - lag).toBeCloseTo(cp.w - cp.e, 6);
    expect(m.get("process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(m.has("nodejs_heap_size_total_bytes")).toBe(true);
    expect([
      m.has("nodejs_active_handles_total"),
      m.has("nodejs_active_requests_total"),
      m.has("nodejs_active_resources_total"),
    ]).toEqual([false, false, false]);

    // GET /pipelines shows the same states.
    const listed = await (await fetch(`${api.base}/pipelines`)).json();
    expect(
      listed[0].alerts.map((a: { alert: string; state: string; value: number }) => [a.alert, a.state, a.value]),
    ).toEqual([
      ["drop_share", "firing", dropShare],
      ["quarantine_share", "ok", 0.2],
      ["watermark_stalled", "ok", 0],
      ["backlog", "firing", 3],
      ["correction_failed", "ok", null],
    ]);

    // The watermark has not moved since batch 2 while three rows landed: stalled for a limit of 1 second.
    const impatient = { ...orders, alerts: { ...orders.alerts, watermarkStalled: { for: 1_000 } } };
    await new Promise((r) => setTimeout(r, 1_100));
    const stalled = await evaluateAlerts(pool, impatient, log);
    expect(stalled.map((c) => [c.alert, c.state])).toEqual([["watermark_stalled", "firing"]]);
    expect(stalled[0]!.value).toBeGreaterThanOrEqual(1);
    // The stream reads them: the backlog clears, and the watermark moves.
    await runBatch(pool, orders, "once");
    expect((await evaluateAlerts(pool, impatient, log)).map((c) => `${c.alert} ${c.state} ${c.value}`)).toEqual([
      "watermark_stalled ok 0",
      "backlog ok 0",
    ]);
    expect(await alerts()).toEqual([]);
    // A failed correction run fires until a later one succeeds.
    await pool.query(
      "INSERT INTO straggler.correction_runs (pipeline, trigger, status, error, finished_at) VALUES ($1, 'api', 'failed', 'test failure', now())",
      ["observed"],
    );
    const failedRun = await q("SELECT max(run_id) FROM straggler.correction_runs WHERE pipeline = $1");
    expect(await alerts()).toEqual([`correction_failed firing ${failedRun}`]);
    expect((await scrape()).get(`straggler_alert_firing{pipeline="observed",alert="correction_failed"}`)).toBe(1);
    await fetch(`${api.base}/pipelines/observed/recompute`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: "{}",
    });
    expect(await alerts()).toEqual([`correction_failed ok ${failedRun + 1}`]);

    // Every change reached the webhook (the first after a 503 and a retry), in order per alert.
    const changes = await waitFor("webhook", async () =>
      receiver.received.length === 7 ? receiver.received : undefined,
    );
    expect(receiver.attempts()).toBe(8);
    const seen = (alert: string) => changes.filter((c) => c.alert === alert).map((c) => c.state);
    expect([seen("drop_share"), seen("backlog"), seen("watermark_stalled"), seen("correction_failed")]).toEqual([
      ["firing"],
      ["firing", "ok"],
      ["firing", "ok"],
      ["firing", "ok"],
    ]);
    const backlog = changes.find((c) => c.alert === "backlog" && c.state === "firing")!;
    expect(backlog).toMatchObject({ pipeline: "observed", value: 3, threshold: 2 });
    expect(typeof backlog.since).toBe("string");
    expect(
      (
        await pool.query("SELECT alert, state FROM straggler.alert_states WHERE pipeline = $1 ORDER BY alert", [
          "observed",
        ])
      ).rows,
    ).toEqual([
      { alert: "backlog", state: "ok" },
      { alert: "correction_failed", state: "ok" },
      { alert: "drop_share", state: "firing" },
      { alert: "quarantine_share", state: "ok" },
      { alert: "watermark_stalled", state: "ok" },
    ]);
  });

  it("status (CLI) shows the configured alerts with their recorded states", async () => {
    const { url, pool } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-alerts-"));
    const config = path.join(dir, "pipelines.yaml");
    writeFileSync(config, `pipelines:${servicePipelineYaml("cli-alerts", dir, ["alerts: { backlog: { above: 0 } }"])}`);
    await pool.query(
      "INSERT INTO straggler.alert_states VALUES ('cli-alerts', 'backlog', 'firing', '2026-10-01T12:00:00Z', 7)",
    );
    const [status] = JSON.parse(
      await runCli(["status", "-p", "cli-alerts", "--json"], { DATABASE_URL: url, STRAGGLER_PIPELINES: config }),
    );
    expect(status.alerts).toEqual([
      { alert: "drop_share", state: "ok", since: null, value: null },
      { alert: "backlog", state: "firing", since: "2026-10-01T12:00:00.000Z", value: 7 },
      { alert: "correction_failed", state: "ok", since: null, value: null },
    ]);
  });
});
