import type { Server } from "node:http";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { pino } from "pino";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { lateWithinDelay } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "test-token-0123456789abcdef";
let server: Server | undefined;
afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function start(token: string | undefined, log = createLogger("silent")): Promise<string> {
  const { pool } = await getDb();
  const app = createApp({ pool, pipelines: [lateWithinDelay()], log, token });
  return new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => {
      server = s;
      const a = s.address();
      resolve(`http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`);
    });
  });
}

const seed = (f: string) => readFileSync(path.join(lateWithinDelay().source.landingDir!, f), "utf8");

describe("REST API", () => {
  it("lands events, streams, and recomputes with a token; refuses without one", async () => {
    const { pool } = await getDb();
    const base = await start(TOKEN);
    const p = lateWithinDelay();
    const auth = { authorization: `Bearer ${TOKEN}` };

    // NDJSON bodies, one per seed file, each followed by a micro-batch.
    for (const f of ["1.json", "2.json", "3.json"]) {
      const r = await fetch(`${base}/pipelines/${p.name}/events`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/x-ndjson" },
        body: seed(f),
      });
      expect(r.status).toBe(201);
      const body = await r.json();
      expect([body.accepted, body.quarantined]).toEqual([seed(f).trim().split("\n").length, 0]);
      await runBatch(pool, p, "once");
    }
    // A JSON array with one bad record: quarantined with its reason, the rest accepted.
    const arr = await fetch(`${base}/pipelines/${p.name}/events`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", "idempotency-key": "batch-42" },
      body: '[{"event_time":"2026-10-01 12:45:00","amount":2.50},{"event_time":"not a time","amount":1}]',
    });
    const arrBody = await arr.json();
    expect(arrBody.lastSeq - arrBody.firstSeq).toBe(1);
    expect([arr.status, { ...arrBody, firstSeq: undefined, lastSeq: undefined }]).toEqual([
      201,
      {
        pipeline: p.name,
        source: "http:batch-42",
        alreadyLanded: false,
        landed: 2,
        accepted: 1,
        quarantined: 1,
        byReason: { PARSE_FAIL: 1 },
        firstSeq: undefined,
        lastSeq: undefined,
      },
    ]);
    const retry = await fetch(`${base}/pipelines/${p.name}/events`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", "idempotency-key": "batch-42" },
      body: '[{"event_time":"2026-10-01 12:45:00","amount":2.50},{"event_time":"not a time","amount":1}]',
    });
    expect([retry.status, await retry.json()]).toEqual([200, { ...arrBody, alreadyLanded: true }]);

    // Without a token, and with a wrong one: 401, nothing runs.
    const none = await fetch(`${base}/pipelines/${p.name}/recompute`, { method: "POST" });
    expect([none.status, (await none.json()).message]).toEqual([401, "missing 'Authorization: Bearer <token>' header"]);
    const wrong = await fetch(`${base}/pipelines/${p.name}/recompute`, {
      method: "POST",
      headers: { authorization: "Bearer nope-nope-nope-nope" },
    });
    expect([wrong.status, (await wrong.json()).message]).toEqual([401, "invalid token"]);
    expect((await pool.query("SELECT count(*)::int AS n FROM straggler.correction_runs")).rows[0].n).toBe(0);

    const bad = await fetch(`${base}/pipelines/${p.name}/recompute`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: '{"from":"yesterday","to":"2026-10-02T00:00:00Z"}',
    });
    expect([bad.status, await bad.json()]).toEqual([
      400,
      {
        error: "invalid_request",
        message: "body.from: expected an ISO 8601 instant with a zone, e.g. 2026-10-01T12:00:00Z",
      },
    ]);

    // A body that is JSON but not an object (express.json's strict mode): a 400 that says so, not "null is not valid JSON".
    for (const [body, shown] of [
      ["null", "null"],
      [" 42 ", "42"],
      ['"x"', '"x"'],
    ]) {
      const scalar = await fetch(`${base}/pipelines/${p.name}/recompute`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body,
      });
      expect([scalar.status, await scalar.json()]).toEqual([
        400,
        { error: "invalid_request", message: `request body must be a JSON object or array, got ${shown}` },
      ]);
    }
    const broken = await fetch(`${base}/pipelines/${p.name}/recompute`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: "{nope",
    });
    expect([broken.status, (await broken.json()).error]).toEqual([400, "invalid_request"]);
    expect((await pool.query("SELECT count(*)::int AS n FROM straggler.correction_runs")).rows[0].n).toBe(0);

    const run = await fetch(`${base}/pipelines/${p.name}/recompute`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: "{}",
    });
    const summary = await run.json();
    expect([run.status, summary.status, summary.trigger, summary.windowsChanged]).toEqual([200, "succeeded", "api", 1]);
    expect(summary.changes[0].before.sum).toBe("19");
    expect(summary.changes[0].after.sum).toBe("119");

    const wins = await (await fetch(`${base}/pipelines/${p.name}/windows?status=corrected`)).json();
    expect(
      wins.map((w: { window_start: string; value_sum: string; revision: number }) => [
        w.window_start,
        w.value_sum,
        w.revision,
      ]),
    ).toEqual([["2026-10-01T12:00:00.000Z", "119", 2]]);
    const rec = await (await fetch(`${base}/pipelines/${p.name}/reconcile`)).json();
    expect([rec.ok, rec.mismatches]).toEqual([true, []]);
    const q = await (await fetch(`${base}/pipelines/${p.name}/quarantine`)).json();
    expect(q.byReason).toEqual({ PARSE_FAIL: 1 });
    const runs = await (await fetch(`${base}/pipelines/${p.name}/corrections`)).json();
    const detail = await (await fetch(`${base}/pipelines/${p.name}/corrections/${runs[0].run_id}`)).json();
    expect(
      detail.changes.map((c: { sum_before: string; sum_after: string; late_event_ids: string[] }) => [
        c.sum_before,
        c.sum_after,
        c.late_event_ids.length,
      ]),
    ).toEqual([["19", "119", 1]]);

    expect((await fetch(`${base}/pipelines/nope/windows`)).status).toBe(404);
    const badQuery = await fetch(`${base}/pipelines/${p.name}/windows?status=weird`);
    expect([badQuery.status, (await badQuery.json()).message]).toEqual([
      400,
      "query.status: expected open, final or corrected",
    ]);
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ status: "ok", database: "reachable" });
    const doc = await (await fetch(`${base}/openapi.json`)).json();
    expect(Object.keys(doc.paths)).toContain("/pipelines/{pipeline}/recompute");
  });

  it("without a configured token, mutating routes answer 401 saying how to set one", async () => {
    const base = await start(undefined);
    const r = await fetch(`${base}/pipelines/late-within-delay/recompute`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(r.status).toBe(401);
    expect((await r.json()).message).toContain("set STRAGGLER_API_TOKEN");
  });

  it("a correction started through REST that fails is logged like a scheduled one: 'correction run failed' with its summary's fields", async () => {
    const { pool } = await getDb();
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const base = await start(TOKEN, log);
    const p = lateWithinDelay();
    await pool.query(
      `CREATE FUNCTION public.refuse_runs() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'runs refused'; END$$`,
    );
    await pool.query(
      `CREATE TRIGGER refuse_runs BEFORE UPDATE ON straggler.correction_runs FOR EACH ROW WHEN (NEW.status = 'succeeded') EXECUTE FUNCTION public.refuse_runs()`,
    );
    try {
      const r = await fetch(`${base}/pipelines/${p.name}/recompute`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const summary = await r.json();
      expect([r.status, summary.status, summary.error]).toEqual([500, "failed", "runs refused"]);
      const recorded = await pool.query(
        "SELECT run_id, status, error FROM straggler.correction_history WHERE trigger = 'api' ORDER BY run_id DESC LIMIT 1",
      );
      expect(recorded.rows).toEqual([{ run_id: summary.runId, status: "failed", error: "runs refused" }]);
      const failures = lines.filter((l) => l.msg === "correction run failed");
      expect(
        failures.map(({ time: _time, pid: _pid, hostname: _hostname, durationMs, ...rest }) => ({
          ...rest,
          durationMs: typeof durationMs,
        })),
      ).toEqual([
        {
          level: 50,
          msg: "correction run failed",
          pipeline: p.name,
          runId: summary.runId,
          trigger: "api",
          windowsExamined: 0,
          windowsChanged: 0,
          eventsRecovered: 0,
          durationMs: "number",
          error: "runs refused",
        },
      ]);
    } finally {
      await pool.query("DROP TRIGGER refuse_runs ON straggler.correction_runs");
    }
  });
});
