/**
 * Group keys and event ids (README "Keys"): null, absent and empty-string keys
 * are three inputs and two groups (null and absent together, as SQL and Spark
 * group them); a JSON number used as a key or id has one canonical text. Real
 * landings through the stream, the correction, the REST API and the views.
 */
import type { Server } from "node:http";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { NULL_KEY } from "../../src/core/keys.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { createApp } from "../../src/app.js";
import { landStream } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { ledger } from "../helpers/results.js";

const getDb = useTestDatabase();
const TOKEN = "test-token-0123456789abcdef";
const LANDED = Date.UTC(2024, 0, 15, 12, 30);
let server: Server | undefined;
afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** The issue's common pipeline: 10-minute tumbling windows, 10-minute delay, amount summed. */
function orders(
  name: string,
  fields: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  format: "jsonl" | "csv" = "jsonl",
): PipelineConfig {
  return pipeline({
    name,
    source: { landingDir: `/nonexistent/${name}`, format },
    fields: { eventTime: "event_time", value: "amount", ...fields },
    timestamps: { format: "iso8601" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    ...extra,
  });
}

const land = async (p: PipelineConfig, text: string) =>
  landStream((await getDb()).pool, p, Readable.from([text]), "test", LANDED);
const jsonl = (...objs: object[]) => objs.map((o) => JSON.stringify(o)).join("\n") + "\n";

async function windowsOf(p: PipelineConfig): Promise<Array<[string | null, number, string]>> {
  const { rows } = await (
    await getDb()
  ).pool.query(
    "SELECT group_key, event_count::int AS n, value_sum::text AS s FROM straggler.window_results WHERE pipeline = $1 ORDER BY group_key NULLS FIRST, window_start",
    [p.name],
  );
  return rows.map((r) => [r.group_key, r.n, r.s]);
}

async function startApi(pipelines: PipelineConfig[]): Promise<string> {
  const { pool } = await getDb();
  const app = createApp({ pool, pipelines, log: createLogger("silent"), token: TOKEN });
  return new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => {
      server = s;
      const a = s.address();
      resolve(`http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`);
    });
  });
}

describe("null, absent and empty-string group keys", () => {
  it('region "" (1), null (10), absent (100), "north" (1000): "" = 1, the null group = 110, north = 1000 — through HTTP, the view and REST', async () => {
    const { pool } = await getDb();
    const p = orders("keys-issue", { groupKey: ["region"] });
    const base = await startApi([p]);
    const body = JSON.stringify([
      { event_time: "2024-01-15T12:01:00Z", amount: 1, region: "" },
      { event_time: "2024-01-15T12:02:00Z", amount: 10, region: null },
      { event_time: "2024-01-15T12:03:00Z", amount: 100 },
      { event_time: "2024-01-15T12:04:00Z", amount: 1000, region: "north" },
    ]);
    const r = await fetch(`${base}/pipelines/${p.name}/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body,
    });
    expect([r.status, (await r.json()).accepted]).toEqual([201, 4]);
    await runBatch(pool, p, "once");

    expect(await windowsOf(p)).toEqual([
      [null, 2, "110"],
      ["", 1, "1"],
      ["north", 1, "1000"],
    ]);
    // Stored: NOT NULL text, the null group under the reserved text; the views decode it.
    const stored = await pool.query(
      "SELECT group_key FROM straggler.window_results_table WHERE pipeline = $1 ORDER BY group_key",
      [p.name],
    );
    expect(stored.rows.map((x) => x.group_key)).toEqual(["", "north", NULL_KEY]);
    const bronze = await pool.query("SELECT group_key FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq", [
      p.name,
    ]);
    expect(bronze.rows.map((x) => x.group_key)).toEqual(["", null, null, "north"]);

    const get = async (q: string) =>
      (await (await fetch(`${base}/pipelines/${p.name}/windows${q}`)).json()).map(
        (w: { group_key: string | null; value_sum: string }) => [w.group_key, w.value_sum],
      );
    expect(await get("")).toEqual([
      ["", "1"],
      ["north", "1000"],
      [null, "110"],
    ]);
    // The cursor of a full page (limit 1) walks the same order, the null group included, each window once.
    const walked: [string | null, string][] = [];
    for (let after: string | null = null, i = 0; i < 5; i++) {
      const page: Response = await fetch(
        `${base}/pipelines/${p.name}/windows?limit=1${after ? `&after=${after}` : ""}`,
      );
      walked.push(
        ...(await page.json()).map(
          (w: { group_key: string | null; value_sum: string }) => [w.group_key, w.value_sum] as [string | null, string],
        ),
      );
      after = page.headers.get("straggler-next");
      if (after === null) break;
    }
    expect(walked).toEqual([
      ["", "1"],
      ["north", "1000"],
      [null, "110"],
    ]);
    expect(await get("?nullKey=true")).toEqual([[null, "110"]]);
    expect(await get("?key=")).toEqual([["", "1"]]);
    expect(await get("?key=north")).toEqual([["north", "1000"]]);
    const both = await fetch(`${base}/pipelines/${p.name}/windows?key=north&nullKey=true`);
    expect([both.status, await both.json()]).toEqual([
      400,
      { error: "invalid_request", message: "query.nullKey: give key or nullKey=true, not both" },
    ]);
    const reserved = await fetch(`${base}/pipelines/${p.name}/windows?key=${encodeURIComponent(NULL_KEY)}`);
    expect([reserved.status, await reserved.json()]).toEqual([
      400,
      {
        error: "invalid_request",
        message: "query.key: expected a key without U+FFFF (the null group is named null, or nullKey=true)",
      },
    ]);
    expect((await reconcile(pool, p)).ok).toBe(true);
  });

  it('with several key fields a null stays null inside the key: [null,"x"], ["","x"] and [null,null] are three groups', async () => {
    const { pool } = await getDb();
    const p = orders("keys-composite", { groupKey: ["region", "shop"] });
    await land(
      p,
      jsonl(
        { event_time: "2024-01-15T12:01:00Z", amount: 1, region: null, shop: "x" },
        { event_time: "2024-01-15T12:01:00Z", amount: 2, shop: "x" },
        { event_time: "2024-01-15T12:01:00Z", amount: 4, region: "", shop: "x" },
        { event_time: "2024-01-15T12:01:00Z", amount: 8 },
        { event_time: "2024-01-15T12:01:00Z", amount: 16, region: 7.0, shop: "7.0" },
      ),
    );
    await runBatch(pool, p, "once");
    expect(await windowsOf(p)).toEqual([
      ['["","x"]', 1, "4"],
      ['["7","7.0"]', 1, "16"],
      ['[null,"x"]', 2, "3"],
      ["[null,null]", 1, "8"],
    ]);
  });

  it("CSV: an empty field, quoted or not, is null (the null group); CSV text is never canonicalised", async () => {
    const { pool } = await getDb();
    const p = orders("keys-csv", { groupKey: ["region"] }, {}, "csv");
    await land(
      p,
      'event_time,amount,region\n2024-01-15T12:01:00Z,1,\n2024-01-15T12:02:00Z,10,""\n2024-01-15T12:03:00Z,100,7.0\n2024-01-15T12:04:00Z,1000,7\n',
    );
    await runBatch(pool, p, "once");
    expect(await windowsOf(p)).toEqual([
      [null, 2, "11"],
      ["7", 1, "1000"],
      ["7.0", 1, "100"],
    ]);
  });

  it('admission.missingKey: quarantine makes a null or absent key MISSING_KEY; "" is a key and accepted', async () => {
    const { pool } = await getDb();
    const p = orders("keys-missing", { groupKey: ["region"] }, { admission: { missingKey: "quarantine" } });
    const r = await land(
      p,
      jsonl(
        { event_time: "2024-01-15T12:01:00Z", amount: 1, region: "" },
        { event_time: "2024-01-15T12:02:00Z", amount: 10, region: null },
        { event_time: "2024-01-15T12:03:00Z", amount: 100 },
        { event_time: "2024-01-15T12:04:00Z", amount: 1000, region: "north" },
      ),
    );
    expect([r.accepted, r.byReason]).toEqual([2, { MISSING_KEY: 2 }]);
    const q = await pool.query(
      "SELECT source_line, reason, detail FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq",
      [p.name],
    );
    expect(q.rows).toEqual([
      { source_line: 2, reason: "MISSING_KEY", detail: 'no group key in field "region"' },
      { source_line: 3, reason: "MISSING_KEY", detail: 'no group key in field "region"' },
    ]);
    await runBatch(pool, p, "once");
    expect(await windowsOf(p)).toEqual([
      ["", 1, "1"],
      ["north", 1, "1000"],
    ]);
    expect(await ledger(pool, p.name)).toEqual({ landed: 4, accepted: 2, quarantined: 2 });
  });

  it("a key holding U+FFFF (the reserved null-key text) is MALFORMED, so no key can pose as the null group", async () => {
    const { pool } = await getDb();
    const p = orders("keys-reserved", { groupKey: ["region"] });
    const r = await land(
      p,
      '{"event_time":"2024-01-15T12:01:00Z","amount":1,"region":"\\uffff"}\n{"event_time":"2024-01-15T12:01:00Z","amount":2,"region":"a\uffffb"}\n{"event_time":"2024-01-15T12:01:00Z","amount":4}\n',
    );
    expect([r.accepted, r.byReason]).toEqual([1, { MALFORMED: 2 }]);
    const q = await pool.query("SELECT DISTINCT detail FROM straggler.quarantine WHERE pipeline = $1", [p.name]);
    expect(q.rows).toEqual([{ detail: "group key contains U+FFFF, a Unicode noncharacter reserved for the null key" }]);
    await runBatch(pool, p, "once");
    expect(await windowsOf(p)).toEqual([[null, 1, "4"]]);
  });

  it("key_out, the one SQL decoding of stored keys, agrees with NULL_KEY", async () => {
    const { pool } = await getDb();
    const { rows } = await pool.query(
      "SELECT straggler.key_out($1) AS n, straggler.key_out('') AS e, straggler.key_out('[null]') AS j",
      [NULL_KEY],
    );
    expect(rows[0]).toEqual({ n: null, e: "", j: "[null]" });
  });

  it("the null group is corrected like any other: late event recovered, audit and awaiting-correction views show NULL, REST recompute takes keys [null]", async () => {
    const { pool } = await getDb();
    const p = orders("keys-late", { groupKey: ["region"] });
    const base = await startApi([p]);
    await land(
      p,
      jsonl(
        { event_time: "2024-01-15T12:01:00Z", amount: 1 },
        { event_time: "2024-01-15T12:02:00Z", amount: 5, region: "north" },
      ),
    );
    await runBatch(pool, p, "once");
    await land(p, jsonl({ event_time: "2024-01-15T12:30:00Z", amount: 1, region: "north" }));
    await runBatch(pool, p, "once"); // watermark 12:20: [12:00, 12:10) is final
    await land(
      p,
      jsonl(
        { event_time: "2024-01-15T12:05:00Z", amount: 2, region: null },
        { event_time: "2024-01-15T12:06:00Z", amount: 4, region: "north" },
      ),
    );
    await runBatch(pool, p, "once");
    const awaiting = await pool.query(
      "SELECT group_key, dropped_rows::int AS n FROM straggler.windows_awaiting_correction WHERE pipeline = $1 ORDER BY group_key NULLS FIRST",
      [p.name],
    );
    expect(awaiting.rows).toEqual([
      { group_key: null, n: 1 },
      { group_key: "north", n: 1 },
    ]);

    const r = await fetch(`${base}/pipelines/${p.name}/recompute`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ keys: [null] }),
    });
    const s = await r.json();
    expect([
      r.status,
      s.status,
      s.keys,
      s.changes.map((c: { groupKey: string | null; after: { sum: string } }) => [c.groupKey, c.after.sum]),
    ]).toEqual([200, "succeeded", [null], [[null, "3"]]]);
    const audit = await pool.query(
      "SELECT group_key, sum_before::text, sum_after::text FROM straggler.correction_audit WHERE pipeline = $1",
      [p.name],
    );
    expect(audit.rows).toEqual([{ group_key: null, sum_before: "1", sum_after: "3" }]);
    const history = await pool.query("SELECT group_keys FROM straggler.correction_history WHERE pipeline = $1", [
      p.name,
    ]);
    expect(history.rows).toEqual([{ group_keys: [null] }]);
    // The other group still awaits; a run over everything corrects it.
    const all = await runCorrection(pool, p, { trigger: "cli" });
    expect(all.changes.map((c) => [c.groupKey, c.after.sum])).toEqual([["north", "9"]]);
    expect(await windowsOf(p)).toEqual([
      [null, 2, "3"],
      ["north", 2, "9"],
      ["north", 1, "1"],
    ]);
    expect((await reconcile(pool, p)).ok).toBe(true);
  });
});

describe("a JSON number used as a key or id has one canonical text", () => {
  it("ids 1, 2 then 2.0, 3.0 with store 7 / 7.0, amount 5: one group 7 = 15 (3 events), id 2.0 quarantined DUPLICATE", async () => {
    const { pool } = await getDb();
    const p = orders("numbers-issue", { eventId: "id", groupKey: ["store"] });
    await land(
      p,
      '{"id":1,"store":7,"event_time":"2024-01-15T12:01:00Z","amount":5}\n{"id":2,"store":7,"event_time":"2024-01-15T12:02:00Z","amount":5}\n',
    );
    const again = await land(
      p,
      '{"id":2.0,"store":7.0,"event_time":"2024-01-15T12:02:00Z","amount":5}\n{"id":3.0,"store":7.0,"event_time":"2024-01-15T12:03:00Z","amount":5}\n',
    );
    expect([again.accepted, again.byReason]).toEqual([1, { DUPLICATE: 1 }]);
    const b = await pool.query(
      "SELECT event_id, group_key, status, reason, value::text FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq",
      [p.name],
    );
    expect(b.rows).toEqual([
      { event_id: "1", group_key: "7", status: "accepted", reason: null, value: "5" },
      { event_id: "2", group_key: "7", status: "accepted", reason: null, value: "5" },
      { event_id: "2", group_key: "7", status: "quarantined", reason: "DUPLICATE", value: "5" },
      { event_id: "3", group_key: "7", status: "accepted", reason: null, value: "5" },
    ]);
    await runBatch(pool, p, "once");
    expect(await windowsOf(p)).toEqual([["7", 3, "15"]]);
  });

  it("other members: -0 and 0, 1e2 and 100, 0.50 and .5 are one id each; strings stay strings; values keep their exact text", async () => {
    const { pool } = await getDb();
    const p = orders("numbers-more", { eventId: "id", groupKey: ["store"] });
    const r = await land(
      p,
      [
        '{"id":0,"store":1e2,"event_time":"2024-01-15T12:01:00Z","amount":1.50}',
        '{"id":-0,"store":100,"event_time":"2024-01-15T12:01:00Z","amount":1}',
        '{"id":0.50,"store":100.0,"event_time":"2024-01-15T12:01:00Z","amount":2.0}',
        '{"id":5e-1,"store":"100.0","event_time":"2024-01-15T12:01:00Z","amount":4}',
        '{"id":"0.50","store":"100.0","event_time":"2024-01-15T12:01:00Z","amount":8}',
        '{"id":1e3000,"store":-1.0E-3,"event_time":"2024-01-15T12:01:00Z","amount":16}',
      ].join("\n") + "\n",
    );
    expect([r.accepted, r.byReason]).toEqual([4, { AMENDED_DUPLICATE: 2 }]); // one id each, with other values: amended re-sends
    const b = await pool.query(
      "SELECT event_id, group_key, status, value::text FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq",
      [p.name],
    );
    expect(b.rows.map((x) => [x.event_id, x.group_key, x.status, x.value])).toEqual([
      ["0", "100", "accepted", "1.50"],
      ["0", "100", "quarantined", "1"],
      ["0.5", "100", "accepted", "2.0"],
      ["0.5", "100.0", "quarantined", "4"],
      ["0.50", "100.0", "accepted", "8"],
      ["1e3000", "-0.001", "accepted", "16"],
    ]);
    await runBatch(pool, p, "once");
    expect(await windowsOf(p)).toEqual([
      ["-0.001", 1, "16"],
      ["100", 2, "3.50"],
      ["100.0", 1, "8"],
    ]);
  });

  it("an object or array as key or id: reordered members are one key and one id (a DUPLICATE); an array's order counts", async () => {
    const { pool } = await getDb();
    const p = orders("nested-keys", { eventId: "id", groupKey: ["store"] });
    const r = await land(
      p,
      [
        '{"id":{"src":"a","n":1},"store":{"region":"eu","shard":1.0},"event_time":"2024-01-15T12:01:00Z","amount":1}',
        '{"id":{"n":1.0,"src":"a"},"store":{"shard":1,"region":"eu"},"event_time":"2024-01-15T12:01:00Z","amount":1}',
        '{"id":{"n":2,"src":"a"},"store":{ "shard" : 1e0 , "region" : "eu" },"event_time":"2024-01-15T12:02:00Z","amount":2}',
        '{"id":[1,2],"store":[2,1],"event_time":"2024-01-15T12:03:00Z","amount":4}',
        '{"id":[2,1],"store":[1,2],"event_time":"2024-01-15T12:03:00Z","amount":8}',
      ].join("\n") + "\n",
    );
    expect([r.accepted, r.byReason]).toEqual([4, { DUPLICATE: 1 }]);
    const b = await pool.query(
      "SELECT event_id, group_key, status FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq",
      [p.name],
    );
    expect(b.rows.map((x) => [x.event_id, x.group_key, x.status])).toEqual([
      ['{"n":1,"src":"a"}', '{"region":"eu","shard":1}', "accepted"],
      ['{"n":1,"src":"a"}', '{"region":"eu","shard":1}', "quarantined"],
      ['{"n":2,"src":"a"}', '{"region":"eu","shard":1}', "accepted"],
      ["[1,2]", "[2,1]", "accepted"],
      ["[2,1]", "[1,2]", "accepted"],
    ]);
    await runBatch(pool, p, "once");
    expect(await windowsOf(p)).toEqual([
      ["[1,2]", 1, "8"],
      ["[2,1]", 1, "4"],
      ['{"region":"eu","shard":1}', 2, "3"],
    ]);
  });
});
