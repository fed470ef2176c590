/**
 * Outcome unknown after COMMIT (issue 11.3). A proxy between the service and
 * PostgreSQL cuts the connection right after forwarding a landing's COMMIT:
 * the landing committed, its answer never came back. The service looks the
 * landing up on another connection and answers the truth — 201 with its
 * counts, each event in bronze once. When the COMMIT never reached the
 * server, the answer is 503 with Retry-After and nothing landed. The CLI's
 * landing path (landStream, landRecords underneath) reports the same truth.
 */
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { landStream } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { startProxy, type TcpProxy } from "../helpers/tcpProxy.js";
import { useTestDatabase } from "../helpers/db.js";
import { postedOrders } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "commit-token-0123456789abcdef";
const p = postedOrders("orders");
const BODY = '[{"event_time":"2024-01-15T12:01:00Z","amount":10},{"event_time":"2024-01-15T12:02:00Z","amount":20}]';

let proxy: TcpProxy | undefined;
let proxied: Pool | undefined;
let api: RunningApi | undefined;
afterAll(async () => {
  await api?.close();
  await proxied?.end();
  await proxy?.close();
});

async function setup() {
  const db = await getDb();
  if (!api) {
    proxy = await startProxy(db.url);
    proxied = createPool(proxy.url, 3);
    proxied.on("error", () => undefined);
    api = await startApi({ pool: proxied, pipelines: [p], log: createLogger("silent"), token: TOKEN });
  }
  return { pool: db.pool, proxy: proxy!, proxied: proxied!, base: api.base };
}

const post = (base: string, headers: Record<string, string> = {}) =>
  fetch(`${base}/pipelines/orders/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...headers },
    body: BODY,
  });

async function bronzeBySource(pool: Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query(
    "SELECT (SELECT name FROM straggler.bronze_sources WHERE id = source_id) AS source, count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = 'orders' GROUP BY source_id",
  );
  return Object.fromEntries(rows.map((r) => [r.source, r.n]));
}

describe("outcome unknown after COMMIT", () => {
  it("the connection drops after COMMIT was sent: 201 with the counts, the events in bronze once", async () => {
    const { pool, proxy, base } = await setup();
    proxy.arm("after");
    const r = await post(base);
    const body = await r.json();
    expect(proxy.cuts()).toBe(1);
    expect([r.status, body.alreadyLanded, body.landed, body.accepted, body.lastSeq - body.firstSeq]).toEqual([
      201,
      false,
      2,
      2,
      1,
    ]);
    expect(body.source).toMatch(/^http:[0-9a-f-]{36}$/);
    expect(await bronzeBySource(pool)).toEqual({ [body.source]: 2 });
    const recorded = await pool.query(
      "SELECT rows, first_seq, last_seq FROM straggler.landed_sources WHERE pipeline = 'orders' AND source = $1",
      [body.source],
    );
    expect(recorded.rows).toEqual([{ rows: 2, first_seq: body.firstSeq, last_seq: body.lastSeq }]);

    // A retry without a key is another landing: the events are in bronze twice.
    const again = await post(base);
    const againBody = await again.json();
    expect([again.status, againBody.source === body.source]).toEqual([201, false]);
    expect(Object.values(await bronzeBySource(pool))).toEqual([2, 2]);
  });

  it("with an Idempotency-Key, the truth is 201, and the client's retry is the 200 original answer", async () => {
    const { pool, proxy, base } = await setup();
    proxy.arm("after");
    const r = await post(base, { "idempotency-key": "after-commit-1" });
    const body = await r.json();
    expect([r.status, body.source, body.landed]).toEqual([201, "http:after-commit-1", 2]);
    const retry = await post(base, { "idempotency-key": "after-commit-1" });
    expect([retry.status, await retry.json()]).toEqual([200, { ...body, alreadyLanded: true }]);
    expect((await bronzeBySource(pool))["http:after-commit-1"]).toBe(2);
  });

  it("the connection drops before COMMIT reaches the server: 503 with Retry-After, nothing landed", async () => {
    const { pool, proxy, base } = await setup();
    const before = await bronzeBySource(pool);
    proxy.arm("before");
    const r = await post(base, { "idempotency-key": "before-commit-1" });
    expect([r.status, r.headers.get("retry-after"), (await r.json()).error]).toEqual([503, "5", "unavailable"]);
    expect(await bronzeBySource(pool)).toEqual(before);
    // The retry with the same key lands it, once.
    const retry = await post(base, { "idempotency-key": "before-commit-1" });
    expect([retry.status, (await retry.json()).landed]).toEqual([201, 2]);
    expect((await bronzeBySource(pool))["http:before-commit-1"]).toBe(2);
  });

  it("the CLI's landing path (landStream) reports the committed landing, once", async () => {
    const { pool, proxy, proxied } = await setup();
    proxy.arm("after");
    const r = await landStream(
      proxied,
      p,
      Readable.from(['{"event_time":"2024-01-15T12:03:00Z","amount":30}\n']),
      "stdin",
    );
    expect([r.alreadyLanded, r.landed, r.accepted, r.firstSeq === r.lastSeq]).toEqual([false, 1, 1, true]);
    expect((await bronzeBySource(pool))[r.source]).toBe(1);
    proxy.arm("before");
    await expect(
      landStream(proxied, p, Readable.from(['{"event_time":"2024-01-15T12:04:00Z","amount":40}\n']), "stdin"),
    ).rejects.toThrow(/Connection terminated/);
    const { rows } = await pool.query(
      "SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = 'orders' AND value = 40",
    );
    expect(rows[0].n).toBe(0);
  });
});
