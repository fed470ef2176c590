/**
 * Answers that tell the truth (issue 11.6): nothing a caller sends is
 * silently ignored. `serve` on a port in use exits 1 with the reason; a
 * recompute body that is not JSON is 415 (its range was once ignored and the
 * default set recomputed); a range given half, an empty key list, unknown
 * query parameters (a recompute range sent as query parameters included) and
 * an events body of a type that is not JSON are refused with a message, and
 * nothing runs or lands.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline, servicePipelineYaml } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "honest-token-0123456789abcdef";
const auth = { authorization: `Bearer ${TOKEN}` };
const DIR = mkdtempSync(path.join(tmpdir(), "straggler-honest-"));
const p = pipeline({
  name: "orders",
  source: { landingDir: path.join(DIR, "landing"), format: "jsonl" },
  fields: { eventTime: "event_time", value: "amount" },
  timestamps: { format: "iso8601" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "10 minutes" },
});
const EVENT = '{"event_time":"2024-01-15T12:01:00Z","amount":10}';

let api: RunningApi | undefined;
afterAll(async () => {
  await api?.close();
  rmSync(DIR, { recursive: true, force: true });
});
async function base(): Promise<string> {
  if (!api)
    api = await startApi({ pool: (await getDb()).pool, pipelines: [p], log: createLogger("silent"), token: TOKEN });
  return api.base;
}

async function counts() {
  const { pool } = await getDb();
  const { rows } = await pool.query(
    "SELECT (SELECT count(*)::int FROM straggler.bronze_events) AS bronze, (SELECT count(*)::int FROM straggler.correction_runs) AS runs",
  );
  return rows[0] as { bronze: number; runs: number };
}

async function call(method: string, route: string, init: { headers?: Record<string, string>; body?: string } = {}) {
  const r = await fetch(`${await base()}${route}`, { method, headers: { ...auth, ...init.headers }, body: init.body });
  return [r.status, await r.json()];
}

describe("answers that tell the truth", () => {
  it("serve on a port already in use exits 1 with the reason", async () => {
    const { url } = await getDb();
    const holder = net.createServer();
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", () => r()));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const config = path.join(DIR, "pipelines.yaml");
      writeFileSync(config, `pipelines:${servicePipelineYaml("busy-port", path.join(DIR, "landing"))}`);
      const run = await startCli(["serve"], {
        DATABASE_URL: url,
        PORT: String(port),
        STRAGGLER_PIPELINES: config,
        STRAGGLER_API_TOKEN: TOKEN,
      }).done;
      expect([run.code, run.stderr.trim().split("\n").at(-1)]).toEqual([
        1,
        `straggler: port ${port} is already in use (EADDRINUSE)`,
      ]);
      expect(run.stderr).not.toContain("service started");
    } finally {
      await new Promise<void>((r) => holder.close(() => r()));
    }
  }, 300_000);

  it("POST /recompute with a body that is not application/json: 415, no run", async () => {
    const before = await counts();
    const body = '{"from":"2024-01-15T12:00:00Z","to":"2024-01-15T13:00:00Z"}';
    expect(
      await call("POST", "/pipelines/orders/recompute", { headers: { "content-type": "text/plain" }, body }),
    ).toEqual([
      415,
      {
        error: "unsupported_media_type",
        message: 'Content-Type "text/plain": a recompute body must be application/json',
      },
    ]);
    expect(
      await call("POST", "/pipelines/orders/recompute", {
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "from=2024-01-15T12:00:00Z",
      }),
    ).toEqual([
      415,
      {
        error: "unsupported_media_type",
        message: 'Content-Type "application/x-www-form-urlencoded": a recompute body must be application/json',
      },
    ]);
    expect(await counts()).toEqual(before);
    // Without a body, no type is needed: the windows awaiting correction.
    const [status, summary] = await call("POST", "/pipelines/orders/recompute");
    expect([status, summary.status, summary.range]).toEqual([200, "succeeded", null]);
  });

  it("a recompute range given half, an empty key list, or as query parameters: 400, no run", async () => {
    const before = await counts();
    const json = { "content-type": "application/json" };
    expect(
      await call("POST", "/pipelines/orders/recompute", { headers: json, body: '{"from":"2024-01-15T12:00:00Z"}' }),
    ).toEqual([400, { error: "invalid_request", message: "body.to: give both from and to, or neither" }]);
    expect(await call("POST", "/pipelines/orders/recompute", { headers: json, body: '{"keys":[]}' })).toEqual([
      400,
      { error: "invalid_request", message: "body.keys: expected at least one key; leave keys out for every key" },
    ]);
    expect(
      await call("POST", "/pipelines/orders/recompute?from=2024-01-15T12:00:00Z&to=2024-01-15T13:00:00Z", {
        headers: json,
        body: "{}",
      }),
    ).toEqual([400, { error: "invalid_request", message: 'query: Unrecognized keys: "from", "to"' }]);
    expect(await counts()).toEqual(before);
  });

  it("unknown query parameters are 400 on every pipeline route, never ignored", async () => {
    const unknown = (k: string) => ({ error: "invalid_request", message: `query: Unrecognized key: "${k}"` });
    expect(await call("GET", "/pipelines/orders/windows?form=2024-01-15T12:00:00Z")).toEqual([400, unknown("form")]);
    expect(await call("GET", "/pipelines/orders/progress?limt=5")).toEqual([400, unknown("limt")]);
    expect(await call("GET", "/pipelines/orders/quarantine?reasons=DUPLICATE")).toEqual([400, unknown("reasons")]);
    expect(await call("GET", "/pipelines/orders/corrections?status=failed")).toEqual([400, unknown("status")]);
    expect(await call("GET", "/pipelines/orders/corrections/1?verbose=1")).toEqual([400, unknown("verbose")]);
    expect(await call("GET", "/pipelines/orders/reconcile?key=a")).toEqual([400, unknown("key")]);
    expect(await call("GET", "/pipelines?name=orders")).toEqual([400, unknown("name")]);
    const before = await counts();
    expect(await call("POST", "/pipelines/orders/events?dry_run=1", { body: EVENT })).toEqual([
      400,
      unknown("dry_run"),
    ]);
    expect(await counts()).toEqual(before);
  });

  it("an events body of a type that is not JSON or NDJSON, or not UTF-8: 415, nothing lands", async () => {
    const before = await counts();
    expect(
      await call("POST", "/pipelines/orders/events", {
        headers: { "content-type": "text/csv" },
        body: "event_time,amount\n2024-01-15T12:01:00Z,10\n",
      }),
    ).toEqual([
      415,
      {
        error: "unsupported_media_type",
        message: 'Content-Type "text/csv": expected a JSON array (application/json) or NDJSON (application/x-ndjson)',
      },
    ]);
    expect(
      await call("POST", "/pipelines/orders/events", {
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: EVENT,
      }),
    ).toEqual([
      415,
      {
        error: "unsupported_media_type",
        message:
          'Content-Type "application/x-www-form-urlencoded": expected a JSON array (application/json) or NDJSON (application/x-ndjson)',
      },
    ]);
    expect(
      await call("POST", "/pipelines/orders/events", {
        headers: { "content-type": "application/json; charset=latin1" },
        body: `[${EVENT}]`,
      }),
    ).toEqual([
      415,
      { error: "unsupported_media_type", message: 'Content-Type charset "latin1": events bodies are read as UTF-8' },
    ]);
    expect(await counts()).toEqual(before);
    // The accepted types, for contrast: each lands its one event.
    for (const type of [
      "application/json",
      "application/x-ndjson",
      "application/json; charset=utf-8",
      "text/plain;charset=UTF-8",
      "application/vnd.orders+json",
    ]) {
      const [status, body] = await call("POST", "/pipelines/orders/events", {
        headers: { "content-type": type },
        body: type.includes("json") && !type.includes("ndjson") ? `[${EVENT}]` : EVENT,
      });
      expect([type, status, body.landed]).toEqual([type, 201, 1]);
    }
  });
});
