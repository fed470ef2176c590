/**
 * Values that cannot stop a pipeline (README "Values"): admission bounds
 * |value| by `admission.maxAbsValue` so no sum of accepted rows can overflow
 * numeric; a window whose aggregate still fails (rows accepted under an older
 * policy, any data exception) is isolated by the stream and the correction.
 */
import type { Server } from "node:http";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { createApp } from "../../src/app.js";
import { landStream } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const LANDED = Date.UTC(2024, 0, 15, 12, 30);

function orders(name: string, admission: Record<string, unknown> = {}): PipelineConfig {
  return pipeline({
    name,
    source: { landingDir: `/nonexistent/${name}`, format: "jsonl" },
    fields: { eventId: "id", eventTime: "event_time", value: "amount", groupKey: ["k"] },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission,
  });
}

const ev = (id: string, amount: string, t = "12:01") =>
  `{"id":"${id}","k":"a","event_time":"2024-01-15T${t}:00Z","amount":${amount}}`;

async function quarantine(p: PipelineConfig): Promise<Array<[string, string | null]>> {
  const { rows } = await (
    await getDb()
  ).pool.query("SELECT event_id, detail FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq", [p.name]);
  return rows.map((r) => [r.event_id, r.detail]);
}

describe("admission.maxAbsValue", () => {
  it("default 1e38 and 18 digits after the point: the bounds are accepted either sign, beyond is INVALID_VALUE naming the bound; every aggregate renders short", async () => {
    const { pool } = await getDb();
    const p = orders("values-small");
    expect([p.admission.maxAbsValue, p.admission.maxFractionDigits]).toEqual(["1e38", 18]);
    const r = await landStream(
      pool,
      p,
      Readable.from([
        [
          ev("max", "1e38"),
          ev("neg", "-1E+38"),
          ev("frac", "0.123456789012345678"),
          ev("tiny", "1e-18"),
          ev("zeros", "1.500000000000000000"),
          ev("above", "100000000000000000000000000000000000000.5"),
          ev("frac19", "0.1234567890123456789"),
          ev("tiny19", "12e-19"),
          ev("wide", "1e131000"),
        ].join("\n"),
      ]),
      "t",
      LANDED,
    );
    expect([r.accepted, r.byReason]).toEqual([5, { INVALID_VALUE: 4 }]);
    expect(await quarantine(p)).toEqual([
      ["above", 'value "amount": magnitude above admission.maxAbsValue 1e38: 100000000000000000000000000000000000000.'],
      [
        "frac19",
        'value "amount": 19 digits after the decimal point, above admission.maxFractionDigits 18: 0.1234567890123456789',
      ],
      ["tiny19", 'value "amount": 19 digits after the decimal point, above admission.maxFractionDigits 18: 12e-19'],
      ["wide", 'value "amount": magnitude above admission.maxAbsValue 1e38: 1e131000'],
    ]);
    await runBatch(pool, p, "once");
    const w = await pool.query(
      "SELECT event_count::int AS n, value_sum::text AS sum, value_min::text AS min, value_max::text AS max, length(value_avg::text) AS avg_chars FROM straggler.window_results WHERE pipeline = $1",
      [p.name],
    );
    expect(w.rows).toEqual([
      {
        n: 5,
        sum: "1.623456789012345679",
        min: "-100000000000000000000000000000000000000",
        max: "100000000000000000000000000000000000000",
        avg_chars: 22,
      },
    ]);
  });

  it("the ceiling 1e131000, configured: exactly the bound is accepted either sign, the next value above is INVALID_VALUE; two of the largest still sum", async () => {
    const { pool } = await getDb();
    const p = orders("values-default", { maxAbsValue: "1e131000" });
    const above = "1" + "0".repeat(130999) + "1e1"; // 1e131000 + 10
    const r = await landStream(
      pool,
      p,
      Readable.from([
        [
          ev("max", "1e131000"),
          ev("neg", "-1E+131000"),
          ev("max2", "1e131000"),
          ev("above", above),
          ev("tiny", "1.0000000000000000000001e131000"),
        ].join("\n"),
      ]),
      "t",
      LANDED,
    );
    expect([r.accepted, r.byReason]).toEqual([3, { INVALID_VALUE: 2 }]);
    expect(await quarantine(p)).toEqual([
      ["above", `value "amount": magnitude above admission.maxAbsValue 1e131000: ${above.slice(0, 40)}`],
      ["tiny", 'value "amount": magnitude above admission.maxAbsValue 1e131000: 1.0000000000000000000001e131000'],
    ]);
    await runBatch(pool, p, "once");
    // sum, min, max and the view's average of the largest accepted values all compute.
    const w = await pool.query(
      "SELECT event_count::int AS n, value_sum = 1e131000 AS sum_ok, value_min = -1e131000 AS min_ok, value_max = 1e131000 AS max_ok, value_avg::text AS avg FROM straggler.window_results WHERE pipeline = $1",
      [p.name],
    );
    expect(w.rows.map((x) => [x.n, x.sum_ok, x.min_ok, x.max_ok, x.avg === "3".repeat(131000)])).toEqual([
      [3, true, true, true, true],
    ]);
  });

  it("a configured bound of 1e38 is exact: 1e38 and -1e38 accepted, 1e38 + 0.1 refused", async () => {
    const { pool } = await getDb();
    const p = orders("values-1e38", { maxAbsValue: "1e38" });
    const r = await landStream(
      pool,
      p,
      Readable.from([
        [
          ev("a", "100000000000000000000000000000000000000"),
          ev("b", "-1e38"),
          ev("c", "100000000000000000000000000000000000000.1"),
          ev("d", "99999999999999999999999999999999999999.99"),
        ].join("\n"),
      ]),
      "t",
      LANDED,
    );
    expect([r.accepted, r.byReason]).toEqual([3, { INVALID_VALUE: 1 }]);
    expect(await quarantine(p)).toEqual([
      ["c", 'value "amount": magnitude above admission.maxAbsValue 1e38: 100000000000000000000000000000000000000.'],
    ]);
  });

  it("refuses a bound that is not a positive decimal or is above 1e131000", () => {
    for (const bad of ["0", "-5", "abc", "1e131001", "NaN"]) {
      expect(() => orders("values-bad", { maxAbsValue: bad }), bad).toThrow(
        /expected a positive decimal such as .{1,4}1e38.{1,4}, at most 1e131000 \(larger values could make a sum overflow numeric\)/,
      );
    }
    expect(orders("values-num", { maxAbsValue: 1e38 }).admission.maxAbsValue).toBe("1e+38");
  });
});

/** Rows in bronze as an older policy (no value bound) accepted them, with their landed-source record so the ledger balances. */
async function acceptedUnderOldPolicy(
  p: PipelineConfig,
  source: string,
  rows: Array<{ id: string; k: string; t: string; v: string }>,
): Promise<void> {
  const { pool } = await getDb();
  for (const [i, r] of rows.entries()) {
    await pool.query(
      `INSERT INTO straggler.bronze_events (pipeline, source_id, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status)
       VALUES ($1, straggler.bronze_source_id($1, $2), $3, $4, $5, $6, $7, $8, $9, 'accepted')`,
      [
        p.name,
        source,
        i + 1,
        r.id,
        JSON.stringify(r),
        `2024-01-15T${r.t}:00Z`,
        new Date(LANDED).toISOString(),
        r.k,
        r.v,
      ],
    );
  }
  await pool.query(
    "INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined) VALUES ($1, $2, 'x', $3, $3, 0)",
    [p.name, source, rows.length],
  );
}

const land = async (p: PipelineConfig, ...lines: string[]) =>
  landStream((await getDb()).pool, p, Readable.from([lines.join("\n") + "\n"]), "t", LANDED);
const evk = (id: string, k: string, t: string, amount: string) =>
  `{"id":"${id}","k":"${k}","event_time":"2024-01-15T${t}:00Z","amount":${amount}}`;

async function results(p: PipelineConfig): Promise<string[]> {
  const { rows } = await (
    await getDb()
  ).pool.query(
    "SELECT group_key, to_char(window_start, 'HH24:MI') AS ws, event_count, value_sum::text AS s, status FROM straggler.window_results WHERE pipeline = $1 ORDER BY group_key, window_start",
    [p.name],
  );
  return rows.map((r) => `${r.group_key} ${r.ws} n=${r.event_count} sum=${r.s} ${r.status}`);
}

async function failedWindows(p: PipelineConfig) {
  const { rows } = await (
    await getDb()
  ).pool.query(
    "SELECT group_key, to_char(window_start, 'HH24:MI') AS ws, to_char(window_end, 'HH24:MI') AS we, phase, batch_id, run_id, sqlstate, error, quarantined_rows FROM straggler.failed_windows WHERE pipeline = $1 ORDER BY failure_id",
    [p.name],
  );
  return rows;
}

const OVERFLOW = "value overflows numeric format";
const detail = (phase: "micro-batch" | "correction", rows: "batch" | "late events") =>
  `the ${phase} could not aggregate window [2024-01-15T12:00:00.000Z, 2024-01-15T12:10:00.000Z) of this key: ${OVERFLOW} (SQLSTATE 22003); its rows of the ${rows} are quarantined`;

describe("a window whose aggregate fails cannot stop the pipeline", () => {
  it('two accepted "9e131071" in one batch: their window is recorded failed, its batch rows quarantined, the rest of the batch and every later batch apply', async () => {
    const { pool } = await getDb();
    const p = orders("fail-stream");
    await acceptedUnderOldPolicy(p, "old", [
      { id: "big1", k: "a", t: "12:01", v: "9e131071" },
      { id: "big2", k: "a", t: "12:02", v: "9e131071" },
    ]);
    await land(p, evk("b1", "b", "12:03", "30"), evk("a2", "a", "12:15", "7"));
    const first = await runBatch(pool, p, "once");
    expect([first?.batchId, first?.numInputRows, first?.numQuarantinedRows]).toEqual([0, 2, 2]);
    expect(await results(p)).toEqual(["a 12:10 n=1 sum=7 open", "b 12:00 n=1 sum=30 open"]);
    expect(await failedWindows(p)).toEqual([
      {
        group_key: "a",
        ws: "12:00",
        we: "12:10",
        phase: "stream",
        batch_id: 0,
        run_id: null,
        sqlstate: "22003",
        error: OVERFLOW,
        quarantined_rows: 2,
      },
    ]);
    const q = await pool.query(
      "SELECT event_id, reason, detail FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq",
      [p.name],
    );
    expect(q.rows).toEqual([
      { event_id: "big1", reason: "INVALID_VALUE", detail: detail("micro-batch", "batch") },
      { event_id: "big2", reason: "INVALID_VALUE", detail: detail("micro-batch", "batch") },
    ]);
    // Acknowledged events after it reach the results.
    await land(p, evk("b2", "b", "12:04", "20"));
    expect((await runBatch(pool, p, "once"))?.numInputRows).toBe(1);
    expect(await results(p)).toEqual(["a 12:10 n=1 sum=7 open", "b 12:00 n=2 sum=50 open"]);
    const rec = await reconcile(pool, p);
    expect([rec.ok, rec.ledger, rec.failedWindows]).toEqual([
      true,
      { landed: 5, accepted: 3, quarantined: 2, landedBySource: 5, balanced: true },
      [],
    ]);
  });

  it("a stored sum plus a later batch's value that overflows: only the later batch's rows of that window are quarantined", async () => {
    const { pool } = await getDb();
    const p = orders("fail-stored");
    await acceptedUnderOldPolicy(p, "old-1", [{ id: "big1", k: "a", t: "12:01", v: "9e131071" }]);
    await runBatch(pool, p, "once");
    await acceptedUnderOldPolicy(p, "old-2", [{ id: "big2", k: "a", t: "12:02", v: "9e131071" }]);
    await land(p, evk("a3", "a", "12:03", "1"), evk("c1", "c", "12:03", "2"));
    await runBatch(pool, p, "once");
    const big = "9" + "0".repeat(131071);
    expect(await results(p)).toEqual([`a 12:00 n=1 sum=${big} open`, "c 12:00 n=1 sum=2 open"]);
    // A single huge value: its average (the view's sum / count) computes too.
    const avg = await pool.query(
      "SELECT value_avg::text AS a FROM straggler.window_results WHERE pipeline = $1 AND group_key = 'a'",
      [p.name],
    );
    expect(avg.rows[0].a === big).toBe(true);
    expect((await failedWindows(p)).map((f) => [f.group_key, f.ws, f.phase, f.batch_id, f.quarantined_rows])).toEqual([
      ["a", "12:00", "stream", 1, 2],
    ]);
    expect(
      (await pool.query("SELECT event_id FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq", [p.name])).rows,
    ).toEqual([{ event_id: "big2" }, { event_id: "a3" }]);
    expect((await reconcile(pool, p)).ok).toBe(true);
  });

  it("arriving late: reconcile reports the window failed, the REST recompute answers 200 and isolates it, recovers the other late window, and reconcile is clean", async () => {
    const { pool } = await getDb();
    const p = orders("fail-late");
    await land(p, evk("a1", "a", "12:01", "5"), evk("x1", "a", "12:30", "1"));
    await runBatch(pool, p, "once");
    await land(p, evk("x2", "a", "12:31", "1"));
    await runBatch(pool, p, "once"); // watermark 12:20: [12:00, 12:10) is final
    await acceptedUnderOldPolicy(p, "old", [
      { id: "big1", k: "a", t: "12:01", v: "9e131071" },
      { id: "big2", k: "a", t: "12:02", v: "9e131071" },
    ]);
    await land(p, evk("c1", "c", "12:02", "4"));
    const late = await runBatch(pool, p, "once");
    expect([late?.numRowsDroppedByWatermark, late?.numLateWindows]).toEqual([3, 2]);

    const before = await reconcile(pool, p);
    expect(before.failedWindows).toEqual([
      {
        groupKey: "a",
        windowStart: "2024-01-15T12:00:00.000Z",
        windowEnd: "2024-01-15T12:10:00.000Z",
        sqlstate: "22003",
        error: OVERFLOW,
      },
    ]);
    expect([before.ok, before.mismatches.map((m) => [m.groupKey, m.expected?.sum])]).toEqual([false, [["c", "4"]]]);

    const TOKEN = "test-token-0123456789abcdef";
    const app = createApp({ pool, pipelines: [p], log: createLogger("silent"), token: TOKEN });
    const server = await new Promise<Server>((r) => {
      const s = app.listen(0, "127.0.0.1", () => r(s));
    });
    try {
      const port = (server.address() as { port: number }).port;
      const res = await fetch(`http://127.0.0.1:${port}/pipelines/${p.name}/recompute`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const s = await res.json();
      expect([
        res.status,
        s.status,
        s.windowsFailed,
        s.windowsChanged,
        s.changes.map((c: { groupKey: string; after: { sum: string } }) => [c.groupKey, c.after.sum]),
      ]).toEqual([200, "succeeded", 1, 1, [["c", "4"]]]);
      expect(
        (await failedWindows(p)).map((f) => [
          f.group_key,
          f.ws,
          f.we,
          f.phase,
          f.run_id === s.runId,
          f.sqlstate,
          f.quarantined_rows,
        ]),
      ).toEqual([["a", "12:00", "12:10", "correction", true, "22003", 2]]);
      const fw = await (await fetch(`http://127.0.0.1:${port}/pipelines/${p.name}/failed-windows`)).json();
      expect(
        fw.map((f: { group_key: string; phase: string; error: string; quarantined_rows: number }) => [
          f.group_key,
          f.phase,
          f.error,
          f.quarantined_rows,
        ]),
      ).toEqual([["a", "correction", OVERFLOW, 2]]);
    } finally {
      await new Promise((r) => server.close(r));
    }
    expect(
      (await pool.query("SELECT event_id, detail FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq", [p.name]))
        .rows,
    ).toEqual([
      { event_id: "big1", detail: detail("correction", "late events") },
      { event_id: "big2", detail: detail("correction", "late events") },
    ]);
    expect(await results(p)).toEqual([
      "a 12:00 n=1 sum=5 final",
      "a 12:30 n=2 sum=2 open",
      "c 12:00 n=1 sum=4 corrected",
    ]);
    const after = await reconcile(pool, p);
    expect([after.ok, after.failedWindows, after.mismatches]).toEqual([true, [], []]);
    const again = await runCorrection(pool, p, { trigger: "cli" });
    expect([again.status, again.windowsFailed, again.windowsChanged]).toEqual(["succeeded", 0, 0]);
  });
});
