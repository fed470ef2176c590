/**
 * Values that cannot stop a pipeline (README "Values"): admission bounds
 * |value| by `admission.maxAbsValue` so no sum of accepted rows can overflow
 * numeric; a window whose aggregate still fails (rows accepted under an older
 * policy, any data exception) is isolated by the stream and the correction.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { landStream } from "../../src/ingest/landFile.js";
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

const ev = (id: string, amount: string, t = "12:01") => `{"id":"${id}","k":"a","event_time":"2024-01-15T${t}:00Z","amount":${amount}}`;

async function quarantine(p: PipelineConfig): Promise<Array<[string, string | null]>> {
  const { rows } = await (await getDb()).pool.query("SELECT event_id, detail FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq", [p.name]);
  return rows.map((r) => [r.event_id, r.detail]);
}

describe("admission.maxAbsValue", () => {
  it("default 1e131000: exactly the bound is accepted either sign, the next value above is INVALID_VALUE; two of the largest still sum", async () => {
    const { pool } = await getDb();
    const p = orders("values-default");
    const above = "1" + "0".repeat(130999) + "1e1"; // 1e131000 + 10
    const r = await landStream(pool, p, Readable.from([[ev("max", "1e131000"), ev("neg", "-1E+131000"), ev("max2", "1e131000"), ev("above", above), ev("tiny", "1.0000000000000000000001e131000")].join("\n")]), "t", LANDED);
    expect([r.accepted, r.byReason]).toEqual([3, { INVALID_VALUE: 2 }]);
    expect(await quarantine(p)).toEqual([
      ["above", `value "amount": magnitude above admission.maxAbsValue 1e131000: ${above.slice(0, 40)}`],
      ["tiny", 'value "amount": magnitude above admission.maxAbsValue 1e131000: 1.0000000000000000000001e131000'],
    ]);
    await runBatch(pool, p, "once");
    // sum, min, max and the view's average of the largest accepted values all compute.
    const w = await pool.query("SELECT event_count::int AS n, value_sum = 1e131000 AS sum_ok, value_min = -1e131000 AS min_ok, value_max = 1e131000 AS max_ok, value_avg::text AS avg FROM straggler.window_results WHERE pipeline = $1", [p.name]);
    expect(w.rows.map((x) => [x.n, x.sum_ok, x.min_ok, x.max_ok, x.avg === "3".repeat(131000)])).toEqual([[3, true, true, true, true]]);
  });

  it("a configured bound of 1e38 is exact: 1e38 and -1e38 accepted, 1e38 + 0.1 refused", async () => {
    const { pool } = await getDb();
    const p = orders("values-1e38", { maxAbsValue: "1e38" });
    const r = await landStream(pool, p, Readable.from([[ev("a", "100000000000000000000000000000000000000"), ev("b", "-1e38"), ev("c", "100000000000000000000000000000000000000.1"), ev("d", "99999999999999999999999999999999999999.99")].join("\n")]), "t", LANDED);
    expect([r.accepted, r.byReason]).toEqual([3, { INVALID_VALUE: 1 }]);
    expect(await quarantine(p)).toEqual([["c", 'value "amount": magnitude above admission.maxAbsValue 1e38: 100000000000000000000000000000000000000.']]);
  });

  it("refuses a bound that is not a positive decimal or is above 1e131000", () => {
    for (const bad of ["0", "-5", "abc", "1e131001", "NaN"]) {
      expect(() => orders("values-bad", { maxAbsValue: bad }), bad).toThrow(/expected a positive decimal such as .{1,4}1e38.{1,4}, at most 1e131000 \(larger values could make a sum overflow numeric\)/);
    }
    expect(orders("values-num", { maxAbsValue: 1e38 }).admission.maxAbsValue).toBe("1e+38");
  });
});
