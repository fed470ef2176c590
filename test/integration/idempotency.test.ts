/**
 * Idempotency-Key (issue 10.4), as payment APIs keep it: the key names one
 * request body (SHA-256 of its bytes after Content-Encoding is removed).
 * The same key with another body is 422 and lands nothing; a true retry is
 * answered as the first time (200, alreadyLanded, the original counts and
 * sequence range); two concurrent requests with one key land once.
 */
import { gzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { postedOrders } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "idem-token-0123456789abcdef";
const auth = { authorization: `Bearer ${TOKEN}` };

/** The common pipeline: 10-minute tumbling windows, 10-minute delay, sum of amount. */

const pipelines = ["orders", "orders-b", "race-same", "race-diff"].map(postedOrders);

const e = (minute: number, amount: number) => ({
  event_time: `2024-01-15T12:${String(minute).padStart(2, "0")}:00Z`,
  amount,
});
const e1 = JSON.stringify([e(1, 10)]);
const e2e3 = JSON.stringify([e(2, 20), e(3, 30)]);

let api: RunningApi | undefined;
afterAll(() => api?.close());
async function base(): Promise<string> {
  if (!api) api = await startApi({ pool: (await getDb()).pool, pipelines, log: createLogger("silent"), token: TOKEN });
  return api.base;
}

async function post(pipelineName: string, key: string, body: string | Buffer, headers: Record<string, string> = {}) {
  const r = await fetch(`${await base()}/pipelines/${pipelineName}/events`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json", "idempotency-key": key, ...headers },
    body: typeof body === "string" ? body : new Uint8Array(body),
  });
  return { status: r.status, body: await r.json() };
}

async function bronzeOf(name: string): Promise<Array<{ source: string; amount: string }>> {
  const { pool } = await getDb();
  return (
    await pool.query("SELECT source, value AS amount FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq", [name])
  ).rows;
}

describe("Idempotency-Key", () => {
  it("batch-0042 with [e1] then [e2, e3]: 422 naming the key, nothing landed; a true retry is the original answer", async () => {
    const first = await post("orders", "batch-0042", e1);
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      pipeline: "orders",
      source: "http:batch-0042",
      alreadyLanded: false,
      landed: 1,
      accepted: 1,
      quarantined: 0,
      byReason: {},
      firstSeq: expect.any(Number),
      lastSeq: first.body.firstSeq,
    });

    const reused = await post("orders", "batch-0042", e2e3);
    expect([reused.status, reused.body]).toEqual([
      422,
      {
        error: "idempotency_key_reused",
        message:
          'Idempotency-Key "batch-0042" was already used in pipeline orders with a different request body; nothing landed. A retry must send the same body; new events need a new key',
      },
    ]);
    expect(await bronzeOf("orders")).toEqual([{ source: "http:batch-0042", amount: "10" }]);

    const retry = await post("orders", "batch-0042", e1);
    expect([retry.status, retry.body]).toEqual([200, { ...first.body, alreadyLanded: true }]);
    // The same bytes gzip-compressed are the same body: the hash is of the decoded bytes.
    const gzipped = await post("orders", "batch-0042", gzipSync(e1), { "content-encoding": "gzip" });
    expect([gzipped.status, gzipped.body]).toEqual([200, { ...first.body, alreadyLanded: true }]);
    expect(await bronzeOf("orders")).toHaveLength(1);

    // e2 and e3 under a new key land, and the window holds all three: 10 + 20 + 30.
    const next = await post("orders", "batch-0043", e2e3);
    expect([next.status, next.body.landed, next.body.firstSeq]).toEqual([201, 2, first.body.lastSeq + 1]);
    const { pool } = await getDb();
    await runBatch(pool, pipelines[0]!, "once");
    const w = await pool.query(
      "SELECT window_start, event_count, value_sum FROM straggler.window_results WHERE pipeline = 'orders'",
    );
    expect(w.rows).toEqual([{ window_start: "2024-01-15T12:00:00.000Z", event_count: 3, value_sum: "60" }]);
  });

  it("a retry's answer keeps the quarantine counts of the first answer", async () => {
    const body = JSON.stringify([
      e(4, 1),
      { event_time: "soon", amount: 1 },
      { event_time: "2024-01-15T12:05:00Z", amount: "lots" },
    ]);
    const first = await post("orders", "mixed-1", body);
    expect([first.status, first.body.accepted, first.body.byReason]).toEqual([
      201,
      1,
      { PARSE_FAIL: 1, INVALID_VALUE: 1 },
    ]);
    const retry = await post("orders", "mixed-1", body);
    expect([retry.status, retry.body]).toEqual([200, { ...first.body, alreadyLanded: true }]);
  });

  it("a key belongs to its pipeline: the same key in another pipeline is another landing", async () => {
    const other = await post("orders-b", "batch-0042", e2e3);
    expect([other.status, other.body.source, other.body.landed]).toEqual([201, "http:batch-0042", 2]);
    expect(await bronzeOf("orders-b")).toHaveLength(2);
  });

  it("two concurrent requests with one key and one body land once: one 201, one 200 with the same answer", async () => {
    const [a, b] = await Promise.all([post("race-same", "race-1", e2e3), post("race-same", "race-1", e2e3)]);
    expect([a.status, b.status].sort()).toEqual([200, 201]);
    expect({ ...a.body, alreadyLanded: null }).toEqual({ ...b.body, alreadyLanded: null });
    expect(await bronzeOf("race-same")).toEqual([
      { source: "http:race-1", amount: "20" },
      { source: "http:race-1", amount: "30" },
    ]);
  });

  it("two concurrent requests with one key and different bodies: one 201, one 422, only the winner's events land", async () => {
    const [a, b] = await Promise.all([post("race-diff", "race-2", e1), post("race-diff", "race-2", e2e3)]);
    expect([a.status, b.status].sort()).toEqual([201, 422]);
    const winner = a.status === 201 ? a : b;
    const amounts = (await bronzeOf("race-diff")).map((r) => r.amount);
    expect(amounts).toEqual(winner === a ? ["10"] : ["20", "30"]);
    const loser = winner === a ? b : a;
    expect(loser.body.error).toBe("idempotency_key_reused");
  });
});
