/**
 * Security of the REST API and the landing folder, on a real PostgreSQL:
 * - mutating routes need the bearer token (every way of getting it wrong is a
 *   401 JSON with a message, and nothing is written);
 * - request bodies are limited (413 JSON), also when compressed;
 * - errors are JSON without stack traces, SQL or file paths, also when the
 *   database fails underneath (500 / 503);
 * - hostile query parameters are a 400 naming the field or a correct (empty)
 *   result, never an SQL error;
 * - a landing pass reads only plain files directly in its folder.
 */
import type { Server } from "node:http";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { gzipSync } from "node:zlib";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipelineName } from "../../src/config/settingSchemas.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { createApp, type ApiDeps } from "../../src/app.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { landPendingFiles } from "../../src/ingest/landingFolder.js";
import { listLandingFiles } from "../../src/ingest/landingEntries.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "sec-token-0123456789abcdef";
const TS = "2024-05-01T10:00:00Z";
const DIR = mkdtempSync(path.join(tmpdir(), "straggler-security-"));
const LIMIT = 32 * 1024;

const sec = pipeline({
  name: "sec",
  source: { landingDir: path.join(DIR, "landing"), format: "jsonl", settle: "0 seconds" },
  fields: { eventId: "id", eventTime: "ts", value: "amount", groupKey: ["key"] },
  window: { type: "tumbling", size: "1 hour" },
  watermark: { delay: "1 hour" },
});

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  rmSync(DIR, { recursive: true, force: true });
});

/** Starts the API on an ephemeral port; returns its base URL. */
async function start(over: Partial<ApiDeps> = {}): Promise<string> {
  const { pool } = await getDb();
  const app = createApp({
    pool,
    pipelines: [sec],
    log: createLogger("silent"),
    token: TOKEN,
    maxBodyBytes: LIMIT,
    ...over,
  });
  return new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => {
      servers.push(s);
      const a = s.address();
      resolve(`http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`);
    });
  });
}

const ev = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, ts: TS, amount: 1, key: "a", ...extra });

/** Row counts of every table a mutating route could write. */
async function counts(pool: Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query(`SELECT
      (SELECT count(*)::int FROM straggler.bronze_events) AS bronze,
      (SELECT count(*)::int FROM straggler.landed_sources) AS sources,
      (SELECT count(*)::int FROM straggler.correction_runs) AS runs,
      (SELECT count(*)::int FROM straggler.window_results_table) AS windows`);
  return rows[0];
}

/**
 * An error body as the API must send it: exactly `{ error, message }`, and
 * neither a stack trace, SQL, a file path nor a database error's fields.
 */
function expectCleanError(text: string, status: number): { error: string; message: string } {
  const body = JSON.parse(text) as Record<string, unknown>;
  expect(Object.keys(body).sort(), `${status} ${text}`).toEqual(["error", "message"]);
  expect(typeof body.message).toBe("string");
  expect(text).not.toMatch(/\bat .*:\d+:\d+|^\s*at /m); // stack frames
  expect(text).not.toMatch(/\b(SELECT|INSERT|UPDATE|DELETE|MERGE|COPY|WHERE)\b/); // SQL
  expect(text).not.toMatch(/straggler\.\w+|bronze_events|relation "|syntax error/); // tables, database errors
  expect(text).not.toMatch(/\/work\/|node_modules|[\w-]+\.(ts|js|mjs)\b|\/src\/|\/tmp\//); // file paths
  return body as { error: string; message: string };
}

describe("authentication of mutating routes", () => {
  let base = "";
  beforeAll(async () => {
    base = await start();
  });

  const routes = [
    ["POST /events", "events", () => ev("auth-test")],
    ["POST /recompute", "recompute", () => "{}"],
  ] as const;
  const MISSING = "missing 'Authorization: Bearer <token>' header";
  const INVALID = "invalid token";
  const cases: Array<[string, Record<string, string>, string]> = [
    ["no Authorization header", {}, MISSING],
    ["a wrong token of the same length", { authorization: `Bearer ${"x".repeat(TOKEN.length)}` }, INVALID],
    ["the token with its last character changed", { authorization: `Bearer ${TOKEN.slice(0, -1)}g` }, INVALID],
    ["a shorter token (a prefix of the right one)", { authorization: `Bearer ${TOKEN.slice(0, 10)}` }, INVALID],
    ["a longer token (the right one plus a character)", { authorization: `Bearer ${TOKEN}x` }, INVALID],
    ["a one-character token", { authorization: "Bearer x" }, INVALID],
    ["a 10 kB token", { authorization: `Bearer ${"y".repeat(10_000)}` }, INVALID],
    ["the bare token without a scheme", { authorization: TOKEN }, MISSING],
    ["'Bearer' with no token", { authorization: "Bearer" }, MISSING],
    ["'Bearer ' and spaces", { authorization: "Bearer    " }, MISSING],
    ["Basic credentials", { authorization: `Basic ${Buffer.from(`user:${TOKEN}`).toString("base64")}` }, MISSING],
    ["another scheme with the right token", { authorization: `Token ${TOKEN}` }, MISSING],
    ["two tokens", { authorization: `Bearer ${TOKEN} ${TOKEN}` }, MISSING],
    ["the token in a query parameter instead", {}, MISSING],
  ];

  for (const [routeName, route, body] of routes) {
    for (const [what, headers, message] of cases) {
      it(`${routeName} with ${what}: 401 JSON, nothing written`, async () => {
        const { pool } = await getDb();
        const before = await counts(pool);
        const q = what.includes("query parameter") ? `?token=${TOKEN}&access_token=${TOKEN}` : "";
        const r = await fetch(`${base}/pipelines/sec/${route}${q}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: body(),
        });
        expect(r.status).toBe(401);
        expect(r.headers.get("content-type")).toMatch(/^application\/json/);
        // RFC 9110 §11.6.1: a 401 carries a challenge; RFC 6750 §3: error="invalid_token" for a wrong one.
        expect(r.headers.get("www-authenticate")).toBe(
          message === INVALID ? 'Bearer realm="straggler", error="invalid_token"' : 'Bearer realm="straggler"',
        );
        expect(expectCleanError(await r.text(), 401)).toEqual({ error: "unauthorized", message });
        expect(await counts(pool)).toEqual(before);
      });
    }
  }

  it("the scheme is case-insensitive and the right token works (the control for the cases above)", async () => {
    const { pool } = await getDb();
    const before = await counts(pool);
    const r = await fetch(`${base}/pipelines/sec/events`, {
      method: "POST",
      headers: { authorization: `bearer ${TOKEN}` },
      body: ev("control"),
    });
    expect([r.status, (await r.json()).accepted]).toEqual([201, 1]);
    expect((await counts(pool)).bronze).toBe(before.bronze! + 1);
  });

  it("an unauthenticated oversized body is refused by the token check before it is read (401, not 413)", async () => {
    const r = await fetch(`${base}/pipelines/sec/events`, { method: "POST", body: "x".repeat(LIMIT * 4) });
    expect(expectCleanError(await r.text(), r.status)).toEqual({ error: "unauthorized", message: MISSING });
    expect(r.status).toBe(401);
  });

  it("without a configured token, mutating routes answer 401 saying how to set STRAGGLER_API_TOKEN, whatever is sent", async () => {
    const { pool } = await getDb();
    const open = await start({ token: undefined });
    const before = await counts(pool);
    for (const route of ["events", "recompute"]) {
      for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }, { authorization: "Bearer " }] as Array<
        Record<string, string>
      >) {
        const r = await fetch(`${open}/pipelines/sec/${route}`, {
          method: "POST",
          headers,
          body: route === "events" ? ev("no-token") : "{}",
        });
        expect([r.status, r.headers.get("www-authenticate")]).toEqual([401, 'Bearer realm="straggler"']);
        expect(expectCleanError(await r.text(), 401)).toEqual({
          error: "unauthorized",
          message:
            "mutating routes are disabled: set STRAGGLER_API_TOKEN (16+ characters) in the service's environment and send it as 'Authorization: Bearer <token>'",
        });
      }
    }
    expect(await counts(pool)).toEqual(before);
  });
});

describe("request body limits", () => {
  let base = "";
  const auth = { authorization: `Bearer ${TOKEN}` };
  beforeAll(async () => {
    base = await start();
  });
  const TOO_LARGE = { error: "payload_too_large", message: "request body is larger than the limit" };

  it("an events body over the limit is 413 JSON and nothing lands", async () => {
    const { pool } = await getDb();
    const before = await counts(pool);
    const body = Array.from({ length: 1000 }, (_, i) => ev(`big-${i}`)).join("\n");
    expect(body.length).toBeGreaterThan(LIMIT);
    const r = await fetch(`${base}/pipelines/sec/events`, { method: "POST", headers: auth, body });
    expect(r.status).toBe(413);
    expect(expectCleanError(await r.text(), 413)).toEqual(TOO_LARGE);
    expect(await counts(pool)).toEqual(before);
  });

  it("a body of exactly the limit is read", async () => {
    const one = ev("exact");
    const body = one + " ".repeat(LIMIT - Buffer.byteLength(one));
    expect(Buffer.byteLength(body)).toBe(LIMIT);
    const r = await fetch(`${base}/pipelines/sec/events`, { method: "POST", headers: auth, body });
    expect([r.status, (await r.json()).landed]).toEqual([201, 1]);
  });

  it("a streamed (chunked, no Content-Length) body over the limit is 413", async () => {
    const { pool } = await getDb();
    const before = await counts(pool);
    const chunk = new TextEncoder().encode(ev("chunk") + "\n");
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent > LIMIT * 2) return c.close();
        sent += chunk.length;
        c.enqueue(chunk);
      },
    });
    const r = await fetch(`${base}/pipelines/sec/events`, {
      method: "POST",
      headers: auth,
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(r.status).toBe(413);
    expect(expectCleanError(await r.text(), 413)).toEqual(TOO_LARGE);
    expect(await counts(pool)).toEqual(before);
  });

  it("a gzip bomb is limited by its inflated size: 413, nothing lands", async () => {
    const { pool } = await getDb();
    const before = await counts(pool);
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20)); // 50 MiB of spaces, ~50 kB compressed
    const r = await fetch(`${base}/pipelines/sec/events`, {
      method: "POST",
      headers: { ...auth, "content-encoding": "gzip" },
      body: bomb,
    });
    expect(r.status).toBe(413);
    expect(expectCleanError(await r.text(), 413)).toEqual(TOO_LARGE);
    expect(await counts(pool)).toEqual(before);
  });

  it("an unknown Content-Encoding is refused as a client error with a JSON message", async () => {
    const r = await fetch(`${base}/pipelines/sec/events`, {
      method: "POST",
      headers: { ...auth, "content-encoding": "x-evil" },
      body: ev("enc"),
    });
    expect(r.status).toBe(415);
    expect(expectCleanError(await r.text(), 415)).toEqual({
      error: "invalid_request",
      message: 'unsupported content encoding "x-evil"',
    });
  });

  it("a recompute body over its 64 kB limit is 413 JSON and no run is recorded", async () => {
    const { pool } = await getDb();
    const before = await counts(pool);
    const r = await fetch(`${base}/pipelines/sec/recompute`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ keys: Array.from({ length: 10_000 }, (_, i) => `key-${i}`) }),
    });
    expect(r.status).toBe(413);
    expect(expectCleanError(await r.text(), 413)).toEqual(TOO_LARGE);
    expect(await counts(pool)).toEqual(before);
  });
});

describe("errors never leak internals", () => {
  const auth = { authorization: `Bearer ${TOKEN}` };

  /** A pino logger whose lines are kept, to check the details go to the log and not to the caller. */
  function capturingLogger() {
    const lines: string[] = [];
    const log = pino(
      { level: "error" },
      new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) }),
    );
    return { log, lines };
  }

  it("a pool that has been ended: 500 JSON without details on every route; the log has them", async () => {
    const { url } = await getDb();
    const ended = createPool(url, 1);
    await ended.query("SELECT 1");
    await ended.end();
    const { log, lines } = capturingLogger();
    const base = await start({ pool: ended, log: log as unknown as ApiDeps["log"] });
    const INTERNAL = { error: "internal", message: "internal error; see the service log" };
    for (const [method, route, body] of [
      ["GET", "/pipelines", undefined],
      ["GET", "/pipelines/sec/windows?key=a", undefined],
      ["GET", "/pipelines/sec/progress", undefined],
      ["GET", "/pipelines/sec/quarantine", undefined],
      ["GET", "/pipelines/sec/corrections", undefined],
      ["GET", "/pipelines/sec/corrections/1", undefined],
      ["GET", "/pipelines/sec/reconcile", undefined],
      ["POST", "/pipelines/sec/events", ev("ended")],
      ["POST", "/pipelines/sec/recompute", "{}"],
    ] as const) {
      const r = await fetch(`${base}${route}`, {
        method,
        headers: { ...auth, "content-type": "application/json" },
        body,
      });
      const text = await r.text();
      expect(r.status, `${method} ${route}: ${text}`).toBe(500);
      expect(expectCleanError(text, 500)).toEqual(INTERNAL);
    }
    const health = await fetch(`${base}/health`);
    expect([health.status, await health.json()]).toEqual([503, { status: "unhealthy", database: "unreachable" }]);
    expect(lines.length).toBe(9);
    expect(lines[0]).toContain("Cannot use a pool after calling end on the pool");
  });

  it("a database that cannot be reached: 503 JSON with Retry-After, without details", async () => {
    const { url } = await getDb();
    const u = new URL(url);
    u.port = "1"; // nothing listens there
    const unreachable = createPool(u.toString(), 1);
    try {
      const base = await start({ pool: unreachable });
      for (const [method, route] of [
        ["GET", "/pipelines/sec/windows"],
        ["POST", "/pipelines/sec/events"],
      ] as const) {
        const r = await fetch(`${base}${route}`, {
          method,
          headers: auth,
          body: method === "POST" ? ev("away") : undefined,
        });
        expect([r.status, r.headers.get("retry-after")]).toEqual([503, "5"]);
        expect(expectCleanError(await r.text(), 503)).toEqual({
          error: "unavailable",
          message: "the database is unreachable; retry later",
        });
      }
    } finally {
      await unreachable.end();
    }
  });

  it("malformed requests are 4xx JSON without internals: bad JSON, bad path encoding, unknown routes and methods", async () => {
    const base = await start();
    const checks: Array<[string, RequestInit, number, { error: string; message: string }]> = [
      [
        "/pipelines/sec/recompute",
        { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: '{"keys":' },
        400,
        { error: "invalid_request", message: "Unexpected end of JSON input" },
      ],
      [
        "/pipelines/sec/recompute",
        {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: '{"keys":["x"],"__proto__":{"polluted":1}}',
        },
        400,
        { error: "invalid_request", message: 'body: Unrecognized key: "__proto__"' },
      ],
      [
        "/pipelines/sec/recompute",
        { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: "[]" },
        400,
        { error: "invalid_request", message: "body: Invalid input: expected object, received array" },
      ],
      [
        "/pipelines/%E0%A4%A/windows",
        {},
        400,
        {
          error: "invalid_request",
          message:
            'path: "%E0%A4%A" is not valid percent-encoding (a % must be followed by two hexadecimal digits of UTF-8; write %25 for a literal %)',
        },
      ],
      ["/pipelines/sec/nothing-here", {}, 404, { error: "not_found", message: "no such route; see GET /openapi.json" }],
      [
        "/pipelines/sec/events",
        { method: "PUT", headers: auth },
        405,
        {
          error: "method_not_allowed",
          message: "PUT is not answered at /pipelines/{pipeline}/events; it answers POST (see GET /openapi.json)",
        },
      ],
      ["/../../etc/passwd", {}, 404, { error: "not_found", message: "no such route; see GET /openapi.json" }],
      [
        "/pipelines/sec/events",
        { method: "POST", headers: { ...auth, "idempotency-key": "'; DROP TABLE x; --" }, body: ev("idem") },
        400,
        { error: "invalid_request", message: "Idempotency-Key: expected 1-128 characters of A-Z a-z 0-9 . _ : -" },
      ],
    ];
    for (const [route, init, status, body] of checks) {
      const r = await fetch(`${base}${route}`, init);
      const text = await r.text();
      expect(r.status, `${init.method ?? "GET"} ${route}: ${text}`).toBe(status);
      expect(expectCleanError(text, status)).toEqual(body);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("hostile query parameters", () => {
  let base = "";
  const auth = { authorization: `Bearer ${TOKEN}` };
  const SQL = [
    "'; DROP TABLE straggler.bronze_events; --",
    "' OR '1'='1",
    "a' OR 1=1 --",
    '"',
    "\\",
    "%",
    "_",
    "$1",
    "a; SELECT pg_sleep(5)",
  ];

  beforeAll(async () => {
    const { pool } = await getDb();
    base = await start();
    // Data for the queries to (not) find: keys a and b, one quarantined record.
    const body = [ev("q1", { key: "a" }), ev("q2", { key: "b" }), ev("q3", { ts: "bad" })].join("\n");
    await landStream(pool, sec, Readable.from([body]), "security");
    await runBatch(pool, sec, "once");
  });

  it("key: SQL metacharacters are compared as text, matching nothing", async () => {
    const ok = await (await fetch(`${base}/pipelines/sec/windows?key=a`)).json();
    expect(ok.map((w: { group_key: string }) => w.group_key)).toEqual(["a"]);
    for (const s of SQL) {
      const r = await fetch(`${base}/pipelines/sec/windows?key=${encodeURIComponent(s)}`);
      expect([s, r.status, await r.json()]).toEqual([s, 200, []]);
    }
  });

  it("status: anything but open, final or corrected is a 400 naming the field", async () => {
    for (const s of [...SQL, "open' OR '1'='1", "OPEN"]) {
      const r = await fetch(`${base}/pipelines/sec/windows?status=${encodeURIComponent(s)}`);
      expect(r.status).toBe(400);
      expect(expectCleanError(await r.text(), 400)).toEqual({
        error: "invalid_request",
        message: "query.status: expected open, final or corrected",
      });
    }
  });

  it("reason: SQL metacharacters match no quarantined row; the counts by reason are unchanged", async () => {
    const all = await (await fetch(`${base}/pipelines/sec/quarantine`)).json();
    expect([all.byReason, all.rows.length]).toEqual([{ PARSE_FAIL: 1 }, 1]);
    for (const s of SQL) {
      const r = await fetch(`${base}/pipelines/sec/quarantine?reason=${encodeURIComponent(s)}`);
      expect([s, r.status, await r.json()]).toEqual([s, 200, { byReason: { PARSE_FAIL: 1 }, rows: [] }]);
    }
  });

  it("NUL characters (which PostgreSQL text cannot hold) are a 400 naming the field, not a database error", async () => {
    for (const [route, field] of [
      ["windows?key=a%00b", "query.key"],
      ["quarantine?reason=%00", "query.reason"],
    ]) {
      const r = await fetch(`${base}/pipelines/sec/${route}`);
      expect(r.status, route).toBe(400);
      expect(expectCleanError(await r.text(), 400)).toEqual({
        error: "invalid_request",
        message: `${field}: expected text without NUL characters`,
      });
    }
    const { pool } = await getDb();
    const before = await counts(pool);
    const r = await fetch(`${base}/pipelines/sec/recompute`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: '{"keys":["a\\u0000"]}',
    });
    expect(r.status).toBe(400);
    expect(expectCleanError(await r.text(), 400)).toEqual({
      error: "invalid_request",
      message: "body.keys.0: expected text without NUL characters",
    });
    expect(await counts(pool)).toEqual(before);
  });

  it("repeated, bracketed, malformed and unknown parameters: 400 naming the field", async () => {
    const checks: Array<[string, number, string]> = [
      ["windows?key=a&key=b", 400, "parameter key is given 2 times; give it once"],
      ["windows?limit=1;DROP%20TABLE%20x", 400, "query.limit: expected an integer from 1 to 10000"],
      ["windows?limit=-1", 400, "query.limit: expected an integer from 1 to 10000"],
      ["windows?limit=10001", 400, "query.limit: expected an integer from 1 to 10000"],
      ["windows?limit=1e400", 400, "query.limit: expected an integer from 1 to 10000"],
      [
        "windows?from=2024-01-01'%20OR%201=1--&to=2024-02-01T00:00:00Z",
        400,
        "query.from: expected an ISO 8601 instant with a zone, e.g. 2026-10-01T12:00:00Z",
      ],
      [
        "reconcile?from=2024-01-01T00:00:00Z&to=now()",
        400,
        "query.to: expected an ISO 8601 instant with a zone, e.g. 2026-10-01T12:00:00Z",
      ],
      ["corrections/1%20OR%201=1", 400, "path.runId: expected a run id (integer)"],
      ["corrections/99999999999999999999", 400, "path.runId: expected a run id (integer)"],
      ["corrections/-1", 400, "path.runId: expected a run id (integer)"],
      ["windows?key[$ne]=x&key[]=y", 400, 'query: Unrecognized keys: "key[$ne]", "key[]"'], // no nested parsing: unknown parameters, refused
    ];
    for (const [route, status, message] of checks) {
      const r = await fetch(`${base}/pipelines/sec/${route}`);
      const text = await r.text();
      expect(r.status, `${route}: ${text}`).toBe(status);
      expect(expectCleanError(text, status)).toEqual({ error: "invalid_request", message });
    }
  });

  it("recompute with SQL metacharacters as keys runs and changes nothing", async () => {
    const { pool } = await getDb();
    const before = (
      await pool.query(
        "SELECT group_key, event_count, value_sum, revision FROM straggler.window_results ORDER BY group_key",
      )
    ).rows;
    const r = await fetch(`${base}/pipelines/sec/recompute`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ keys: SQL }),
    });
    const summary = await r.json();
    expect([r.status, summary.status, summary.windowsChanged, summary.keys]).toEqual([200, "succeeded", 0, SQL]);
    expect(
      (
        await pool.query(
          "SELECT group_key, event_count, value_sum, revision FROM straggler.window_results ORDER BY group_key",
        )
      ).rows,
    ).toEqual(before);
  });

  it("the database is intact after all of the above", async () => {
    const { pool } = await getDb();
    const t = await pool.query(
      "SELECT to_regclass('straggler.bronze_events') AS b, to_regclass('straggler.window_results_table') AS w",
    );
    expect(t.rows[0]).toEqual({ b: "straggler.bronze_events", w: "straggler.window_results_table" });
  });
});

describe("the landing folder cannot reach outside itself", () => {
  const landing = path.join(DIR, "landing");
  const outside = path.join(DIR, "outside");

  beforeAll(() => {
    mkdirSync(landing, { recursive: true });
    mkdirSync(path.join(outside, "dir.jsonl"), { recursive: true });
    writeFileSync(path.join(outside, "secret.jsonl"), ev("SECRET") + "\n");
    writeFileSync(path.join(outside, "dir.jsonl", "inner.jsonl"), ev("SECRET-INNER") + "\n");
    writeFileSync(path.join(landing, "a.jsonl"), ev("plain-a") + "\n");
    writeFileSync(path.join(landing, "B.JSONL"), ev("plain-b") + "\n"); // extensions compare case-insensitively
    symlinkSync(path.join(outside, "secret.jsonl"), path.join(landing, "link-to-file.jsonl"));
    symlinkSync("../outside/secret.jsonl", path.join(landing, "relative-link.jsonl"));
    symlinkSync(path.join(outside, "dir.jsonl"), path.join(landing, "link-to-dir.jsonl"));
    symlinkSync(path.join(landing, "a.jsonl"), path.join(landing, "link-inside.jsonl")); // even one pointing inside: a symlink is not a plain file
    mkdirSync(path.join(landing, "sub.jsonl"));
    writeFileSync(path.join(landing, "sub.jsonl", "nested.jsonl"), ev("NESTED") + "\n");
    writeFileSync(path.join(landing, ".hidden.jsonl"), ev("HIDDEN") + "\n");
    writeFileSync(path.join(landing, "_writing.jsonl"), ev("IN-PROGRESS") + "\n");
    writeFileSync(path.join(landing, "notes.txt"), ev("TXT") + "\n");
  });

  it("readdir reports a symlink as a symlink, not a file (what the listing relies on)", () => {
    const link = readdirSync(landing, { withFileTypes: true }).find((e) => e.name === "link-to-file.jsonl")!;
    expect([link.isSymbolicLink(), link.isFile(), link.isDirectory()]).toEqual([true, false, false]);
  });

  it("listLandingFiles lists only plain files directly in the folder, with the format's extension", async () => {
    expect(await listLandingFiles(sec)).toEqual(["B.JSONL", "a.jsonl"]);
  });

  it("a landing pass lands only those files: nothing from outside, below, hidden or in progress", async () => {
    const { pool } = await getDb();
    const pass = await landPendingFiles(pool, sec);
    expect(pass.landed.map((r) => [r.source, r.landed])).toEqual([
      ["B.JSONL", 1],
      ["a.jsonl", 1],
    ]);
    // Whatever is not a plain file is refused by name, never read.
    expect(pass.refused).toEqual([
      { name: "link-inside.jsonl", reason: "not a regular file: a symbolic link" },
      { name: "link-to-dir.jsonl", reason: "not a regular file: a symbolic link" },
      { name: "link-to-file.jsonl", reason: "not a regular file: a symbolic link" },
      { name: "relative-link.jsonl", reason: "not a regular file: a symbolic link" },
      { name: "sub.jsonl", reason: "not a regular file: a directory" },
    ]);
    const ids = (
      await pool.query(
        "SELECT event_id FROM straggler.bronze WHERE pipeline = 'sec' AND source NOT LIKE 'security:%' AND source NOT LIKE 'http:%' ORDER BY event_id",
      )
    ).rows.map((r) => r.event_id);
    expect(ids).toEqual(["plain-a", "plain-b"]);
    const leaked = await pool.query(
      "SELECT count(*)::int AS n FROM straggler.bronze WHERE raw LIKE '%SECRET%' OR raw LIKE '%NESTED%' OR raw LIKE '%HIDDEN%' OR raw LIKE '%IN-PROGRESS%'",
    );
    expect(leaked.rows[0].n).toBe(0);
  });

  it("a file replaced by a symlink after listing is refused when opened (no-follow), and nothing lands", async () => {
    const { pool } = await getDb();
    const before = await counts(pool);
    await expect(
      landFile(pool, sec, path.join(landing, "link-to-file.jsonl"), "link-to-file.jsonl", { noFollow: true }),
    ).rejects.toThrow("not a regular file: a symbolic link");
    expect(await counts(pool)).toEqual(before);
  });

  it("landing passes over already-landed files open none of them (no file descriptor leak)", async () => {
    // Every pass visits every listed file; a landed one must not be opened at all. Before the
    // fix each pass leaked one descriptor per landed file: 20 passes x 2 files = 40 here.
    if (!existsSync("/proc/self/fd")) return; // Linux only
    const { pool } = await getDb();
    const fds = () => readdirSync("/proc/self/fd").length;
    await landPendingFiles(pool, sec); // warm: the pool's connections are open
    const before = fds();
    for (let pass = 0; pass < 20; pass++) expect((await landPendingFiles(pool, sec)).landed).toEqual([]);
    expect(fds() - before).toBeLessThan(5); // slack for a pool connection opened meanwhile, never 40
  });

  it("pipeline names (which name folders and URLs) cannot contain '/', '..' or anything but a-z 0-9 _ -", () => {
    for (const bad of ["../etc", "..", "a/b", "/abs", "a\\b", ".hidden", "a..b", "%2e%2e", "a\u0000"])
      expect(pipelineName.safeParse(bad).success, bad).toBe(false);
    for (const good of ["a", "nyc-taxi", "usgs_earthquakes", "0x"])
      expect(pipelineName.safeParse(good).success, good).toBe(true);
  });
});
