/**
 * The correction's two recompute plans (src/correction/plan.ts): per-window reads
 * (recomputeTargets.ts) and one event-time range scan with a group-by
 * (recomputeTargetsDense.ts) fill `corr_changes` with the same rows — a changed final
 * window, a window bronze has and the results do not; an unchanged stored window and a
 * target without rows left out — and the rule picks the plan from the targets' spread.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { choosePlan } from "../../src/correction/plan.js";
import type { Pool, PoolClient } from "../../src/db/pool.js";
import { collectTargets } from "../../src/db/sql/correction/collectTargets.js";
import { createRunTables } from "../../src/db/sql/lifecycle/createRunTables.js";
import { recomputeTargets } from "../../src/db/sql/correction/recomputeTargets.js";
import { readTargetSpread, recomputeTargetsDense } from "../../src/db/sql/correction/recomputeTargetsDense.js";
import { landFile } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const dir = mkdtempSync(path.join(os.tmpdir(), "straggler-correction-plan-test-"));

const tumbling = (name: string, offset?: string): PipelineConfig =>
  pipeline({
    name,
    source: { landingDir: dir, format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
    window: { type: "tumbling", size: "10 minutes", ...(offset === undefined ? {} : { offset }) },
    watermark: { delay: "10 minutes" },
  });

async function land(pool: Pool, p: PipelineConfig, name: string, records: Record<string, unknown>[]): Promise<void> {
  const file = path.join(dir, `${p.name}-${name}`);
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  await landFile(pool, p, file, name);
  await runBatch(pool, p, "once");
}

/** corr_changes as text rows, by key and window. */
async function changes(c: PoolClient): Promise<string[]> {
  const { rows } = await c.query(
    `SELECT straggler.key_out(group_key) AS k, to_char(window_start AT TIME ZONE 'UTC', 'HH24:MI') AS ws,
            to_char(window_end AT TIME ZONE 'UTC', 'HH24:MI') AS we,
            rev_before, n_before, s_before, lo_before, hi_before, n, s, lo, hi FROM corr_changes ORDER BY 1, 2`,
  );
  const cols = (r: Record<string, unknown>) => [
    r.k,
    r.ws,
    r.we,
    r.rev_before,
    r.n_before,
    r.s_before,
    r.lo_before,
    r.hi_before,
    r.n,
    r.s,
    r.lo,
    r.hi,
  ];
  return rows.map((r) => cols(r).map(String).join(" "));
}

/** Both plans over the run's targets (late windows plus `extra`), in one transaction rolled back. */
async function bothPlans(pool: Pool, p: PipelineConfig, extra: [string, string, string][]) {
  const c = await pool.connect();
  try {
    await c.query("BEGIN");
    await createRunTables(c);
    const cpSql = "SELECT last_offset, watermark FROM straggler.checkpoints WHERE pipeline = $1";
    const cp = (await c.query(cpSql, [p.name])).rows[0];
    await collectTargets(c, p, { snapshot: Number(cp.last_offset), watermark: cp.watermark, range: null, keys: null });
    for (const [k, ws, we] of extra) await c.query("INSERT INTO corr_targets VALUES ($1, $2, $3)", [k, ws, we]);
    const spread = await readTargetSpread(c, p.name, 1, 2);
    await recomputeTargets(c, p.name, Number(cp.last_offset));
    const sparse = await changes(c);
    await c.query("TRUNCATE corr_changes");
    await recomputeTargetsDense(c, p, Number(cp.last_offset));
    const dense = await changes(c);
    await c.query("ROLLBACK");
    return { spread, sparse, dense };
  } finally {
    c.release();
  }
}

const onTime = [
  { id: "1", t: "2026-10-01T12:01:00Z", k: "a", v: 1 },
  { id: "2", t: "2026-10-01T12:09:59.999999Z", k: "a", v: 2 },
  { id: "3", t: "2026-10-01T12:10:00Z", k: "a", v: 5 },
  { id: "4", t: "2026-10-01T13:00:00Z", k: "a", v: 0 },
];
const late = [
  { id: "5", t: "2026-10-01T12:05:00Z", k: "a", v: 10 },
  { id: "6", t: "2026-10-01T12:15:00Z", k: "b", v: 7 },
];

describe("the correction's recompute plans", () => {
  it("both plans: the same changes (a changed window, a new one); an unchanged and an empty target out", async () => {
    const { pool } = await getDb();
    const p = tumbling("plan-tumbling");
    await land(pool, p, "1.jsonl", onTime);
    await land(pool, p, "2.jsonl", late);
    // (a, 12:10) is stored and unchanged; (c, 12:00) has no rows anywhere.
    const extra: [string, string, string][] = [
      ["a", "2026-10-01T12:10:00Z", "2026-10-01T12:20:00Z"],
      ["c", "2026-10-01T12:00:00Z", "2026-10-01T12:10:00Z"],
    ];
    const { spread, sparse, dense } = await bothPlans(pool, p, extra);
    expect(sparse).toEqual(["a 12:00 12:10 1 2 3 1 2 3 13 1 10", "b 12:10 12:20 null null null null null 1 7 7 7"]);
    expect(dense).toEqual(sparse);
    // Targets (a 12:00), (b 12:10), (a 12:10), (c 12:00); stored windows inside [12:00, 12:20) hold 3 events.
    expect(spread).toEqual({ targets: 4, rowsInRange: 3 });
  });

  it("a stored window whose rows are gone, beside a changed key of the same window: count 0 in both plans", async () => {
    const { pool } = await getDb();
    const p = tumbling("plan-gone");
    const more = [
      { id: "7", t: "2026-10-01T13:02:00Z", k: "b", v: 4 },
      { id: "8", t: "2026-10-01T13:30:00Z", k: "a", v: 1 },
    ];
    await land(pool, p, "1.jsonl", [...onTime, ...more]);
    await land(pool, p, "2.jsonl", [{ id: "9", t: "2026-10-01T13:05:00Z", k: "b", v: 6 }]);
    // (a, 13:00) holds one row, stored as count 1; quarantined now (as a cutover may leave it), the window has none.
    const c = await pool.connect();
    try {
      await c.query("BEGIN");
      await c.query(
        "UPDATE straggler.bronze_events SET status = 'quarantined', reason = 'TOO_OLD' WHERE pipeline = $1 AND event_id = '4'",
        [p.name],
      );
      await c.query("COMMIT");
    } finally {
      c.release();
    }
    const { sparse, dense } = await bothPlans(pool, p, [["a", "2026-10-01T13:00:00Z", "2026-10-01T13:10:00Z"]]);
    expect(sparse).toEqual(["a 13:00 13:10 1 1 0 0 0 0 null null null", "b 13:00 13:10 1 1 4 4 4 2 10 4 6"]);
    expect(dense).toEqual(sparse);
  });

  it("windows with an offset: the range scan assigns each row the window the per-window reads read", async () => {
    const { pool } = await getDb();
    const p = tumbling("plan-offset", "3 minutes");
    await land(pool, p, "1.jsonl", onTime);
    await land(pool, p, "2.jsonl", late);
    const { sparse, dense } = await bothPlans(pool, p, []);
    expect(sparse).toEqual(["a 12:03 12:13 1 2 7 2 5 3 17 2 10", "b 12:13 12:23 null null null null null 1 7 7 7"]);
    expect(dense).toEqual(sparse);
  });

  it("the rule: the range scan below 2 range rows per target; the per-window reads otherwise, or as forced", () => {
    expect(choosePlan({ targets: 1000, rowsInRange: 1999 }, undefined)).toBe("dense");
    expect(choosePlan({ targets: 1000, rowsInRange: 2000 }, undefined)).toBe("sparse");
    expect(choosePlan({ targets: 2919, rowsInRange: 296_453 }, undefined)).toBe("sparse");
    expect(choosePlan({ targets: 2919, rowsInRange: 296_453 }, "dense")).toBe("dense");
    expect(choosePlan({ targets: 10, rowsInRange: 1 }, "sparse")).toBe("sparse");
  });
});
