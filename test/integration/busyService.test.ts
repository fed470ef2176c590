/**
 * One slow landing never stalls the service (issue 11.4), asserted by
 * outcome (the timings are printed by load.test.ts and the benchmark):
 * - landings waiting for their pipeline's append lock hold no connection:
 *   with the lock held elsewhere (another process's long landing), six
 *   concurrent posts leave the pool free for reads, and no session waits on
 *   the lock in PostgreSQL (they try it and back off);
 * - `/health` has connections of its own: it answers while the pool is
 *   exhausted, and a request that cannot get a connection within the pool's
 *   acquisition timeout is 503 `busy` with Retry-After;
 * - a large JSON array body is read as a stream: every element lands with
 *   its exact number text; pretty-printed elements land as one record each.
 */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { LockNamespace } from "../../src/db/locks.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { postedOrders } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "busy-token-0123456789abcdef";
const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };

const pipelines = ["slow", "other", "big"].map(postedOrders);
const event = (minute: number, amount: string) =>
  `{"event_time":"2024-01-15T12:${String(minute).padStart(2, "0")}:00Z","amount":${amount}}`;

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

async function startWith(pool: Pool, healthPool?: Pool): Promise<RunningApi> {
  const api = await startApi({ pool, healthPool, pipelines, log: createLogger("silent"), token: TOKEN });
  closers.push(api.close);
  return api;
}

describe("a busy service keeps answering", () => {
  it("posts waiting for a pipeline's append lock hold no connection: reads of another pipeline answer meanwhile", async () => {
    const { url, pool: direct } = await getDb();
    const pool = createPool(url, 3);
    closers.push(() => pool.end());
    const api = await startWith(pool);
    // Another process holds the append lock of "slow", as a long landing does.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    closers.push(() => holder.end());
    await holder.query("BEGIN");
    await holder.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [LockNamespace.bronzeAppend, "slow"]);

    let answered = 0;
    const posts = Array.from({ length: 6 }, (_, i) =>
      fetch(`${api.base}/pipelines/slow/events`, { method: "POST", headers: auth, body: `[${event(i, "1")}]` }).then(
        async (r) => {
          answered++;
          return [r.status, (await r.json()).landed];
        },
      ),
    );
    await new Promise((r) => setTimeout(r, 300)); // the posts are queued or trying the lock by now
    // Three pooled connections, six waiting posts: reads still get a connection.
    const reads = await Promise.all(
      Array.from({ length: 5 }, () => fetch(`${api.base}/pipelines/other/windows`).then((r) => r.status)),
    );
    expect(reads).toEqual([200, 200, 200, 200, 200]);
    const waiting = await direct.query(
      "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted",
    );
    expect(waiting.rows[0].n).toBe(0);
    expect(answered).toBe(0); // every post is still waiting for the lock

    await holder.query("COMMIT");
    expect(await Promise.all(posts)).toEqual(Array.from({ length: 6 }, () => [201, 1]));
    const landed = await direct.query("SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = 'slow'");
    expect(landed.rows[0].n).toBe(6);
  });

  it("health answers from its own pool while the main pool is exhausted; a request that gets no connection in time is 503 busy", async () => {
    const { url } = await getDb();
    const pool = createPool(url, 2, 300);
    const healthPool = createPool(url, 1, 2_000);
    closers.push(
      () => pool.end(),
      () => healthPool.end(),
    );
    const api = await startWith(pool, healthPool);
    const held = [await pool.connect(), await pool.connect()];
    try {
      const health = await fetch(`${api.base}/health`);
      expect([health.status, await health.json()]).toEqual([200, { status: "ok", database: "reachable" }]);
      const read = await fetch(`${api.base}/pipelines/other/windows`);
      expect([read.status, read.headers.get("retry-after"), await read.json()]).toEqual([
        503,
        "1",
        { error: "busy", message: "no database connection became free in time (the service is busy); retry later" },
      ]);
    } finally {
      held.forEach((c) => c.release());
    }
    expect((await fetch(`${api.base}/pipelines/other/windows`)).status).toBe(200);
  });

  it("a 40,000-element JSON array body lands every element with its exact number text", async () => {
    const { pool } = await getDb();
    const api = await startWith(pool);
    const n = 40_000;
    // amounts 0.01, 0.02, …: a float sum would drift; pretty-printed, so elements span lines.
    const body =
      "[\n" +
      Array.from(
        { length: n },
        (_, i) => `  {\n    "event_time": "2024-01-15T12:0${i % 10}:00Z",\n    "amount": ${(i + 1) / 100}\n  }`,
      ).join(",\n") +
      "\n]";
    const r = await fetch(`${api.base}/pipelines/big/events`, { method: "POST", headers: auth, body });
    const answer = await r.json();
    expect([r.status, answer.landed, answer.accepted, answer.quarantined]).toEqual([201, n, n, 0]);
    const raw = await pool.query("SELECT raw FROM straggler.bronze_events WHERE pipeline = 'big' ORDER BY seq LIMIT 2");
    expect(raw.rows.map((x) => x.raw)).toEqual([
      '{"event_time":"2024-01-15T12:00:00Z","amount":0.01}',
      '{"event_time":"2024-01-15T12:01:00Z","amount":0.02}',
    ]);
    await runBatch(pool, pipelines[2]!, "once");
    const w = await pool.query("SELECT event_count, value_sum FROM straggler.window_results WHERE pipeline = 'big'");
    expect(w.rows).toEqual([{ event_count: n, value_sum: `${(n * (n + 1)) / 200}.00` }]);
  });
});
