/**
 * Session windows through the real stream (update mode with retractions),
 * the correction job and reconcile: sessions that touch exactly at the gap
 * merge, 1 ms beyond the gap starts a new one, an event bridging two open
 * sessions leaves one row and two retractions, a late event bridging two
 * final sessions is dropped by the stream and merged by the correction.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import type { Pool } from "../../src/db/pool.js";
import { landStream } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { createLogger } from "../../src/log.js";
import { startApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { sessionOrders } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

/** Sessions with a 30-minute gap per `k`, delay 1 hour. */
const sessionPipeline = (name: string): PipelineConfig => sessionOrders(name, "1 hour");

let sources = 0;
/** Lands `[id, "HH:MM[:SS.mmm]" on 2024-05-01 UTC, key, value]` rows as one source, then runs one micro-batch. */
async function landAndRun(pool: Pool, p: PipelineConfig, rows: [string, string, string, number][]) {
  const text = rows.map(([id, t, k, v]) => JSON.stringify({ id, t: `2024-05-01T${t}Z`, k, v })).join("\n") + "\n";
  await landStream(pool, p, Readable.from([text]), `source-${++sources}`);
  return runBatch(pool, p, "once");
}

/** `HH:MM`, `HH:MM:SS.fff` of an ISO instant: zero seconds and trailing zeros of the fraction left out. */
const time = (iso: string) => iso.slice(11).replace(/Z$/, "").replace(/0+$/, "").replace(/\.$/, "").replace(/:00$/, "");

/** Stored sessions as `key [start,end)=sum/count status`, times of 2024-05-01 UTC. */
async function sessions(pool: Pool, p: PipelineConfig): Promise<string[]> {
  const { rows } = await pool.query(
    `SELECT group_key, window_start, window_end, event_count, value_sum, status FROM straggler.window_results
      WHERE pipeline = $1 ORDER BY group_key, window_start`,
    [p.name],
  );
  return rows.map(
    (r) => `${r.group_key} [${time(r.window_start)},${time(r.window_end)})=${r.value_sum}/${r.event_count} ${r.status}`,
  );
}

/** Retractions as `key [start,end)=sum reason batch → [start,end)`, in the order a consumer reads them. */
async function retractions(pool: Pool, p: PipelineConfig): Promise<string[]> {
  const { rows } = await pool.query(
    `SELECT group_key, window_start, window_end, value_sum, reason, batch_id, run_id, replaced_by_start, replaced_by_end
       FROM straggler.retractions WHERE pipeline = $1 ORDER BY id`,
    [p.name],
  );
  return rows.map(
    (r) =>
      `${r.group_key} [${time(r.window_start)},${time(r.window_end)})=${r.value_sum} ${r.reason} ${r.batch_id ?? `run`} → [${time(r.replaced_by_start)},${time(r.replaced_by_end)})`,
  );
}

describe("session windows in update mode", () => {
  it("touching exactly at the gap merges (an extension retracts the shorter row); 1 ms beyond the gap starts a new session", async () => {
    const { pool } = await getDb();
    const p = sessionPipeline("sessions-touch");
    await landAndRun(pool, p, [["a", "10:00", "x", 1]]);
    expect(await sessions(pool, p)).toEqual(["x [10:00,10:30)=1/1 open"]);
    // 10:30 is exactly the end of [10:00, 10:30): the sessions touch and merge.
    const second = await landAndRun(pool, p, [["b", "10:30", "x", 10]]);
    expect([second!.numRowsDroppedByWatermark, second!.numRowsUpdated]).toEqual([0, 1]);
    expect(await sessions(pool, p)).toEqual(["x [10:00,11:00)=11/2 open"]);
    expect(await retractions(pool, p)).toEqual(["x [10:00,10:30)=1 extended 1 → [10:00,11:00)"]);
    // 11:00:00.001 is 1 ms after the session's end 11:00: a new session.
    await landAndRun(pool, p, [["c", "11:00:00.001", "x", 100]]);
    expect(await sessions(pool, p)).toEqual(["x [10:00,11:00)=11/2 open", "x [11:00:00.001,11:30:00.001)=100/1 open"]);
    expect(await retractions(pool, p)).toHaveLength(1);
  });

  it("an event that bridges two open sessions leaves exactly one row and two retractions (merged); other keys are untouched", async () => {
    const { pool } = await getDb();
    const p = sessionPipeline("sessions-bridge");
    await landAndRun(pool, p, [
      ["a", "12:00", "x", 1],
      ["b", "12:50", "x", 10],
      ["c", "12:25", "y", 1000],
    ]);
    expect(await sessions(pool, p)).toEqual([
      "x [12:00,12:30)=1/1 open",
      "x [12:50,13:20)=10/1 open",
      "y [12:25,12:55)=1000/1 open",
    ]);
    // 12:25 + 30 min = 12:55 >= 12:50, and 12:25 <= 12:30: one session [12:00, 13:20).
    const bridge = await landAndRun(pool, p, [["d", "12:25", "x", 100]]);
    expect([bridge!.numRowsDroppedByWatermark, bridge!.numRowsUpdated, bridge!.numRowsTotal]).toEqual([0, 1, 2]);
    expect(await sessions(pool, p)).toEqual(["x [12:00,13:20)=111/3 open", "y [12:25,12:55)=1000/1 open"]);
    expect(await retractions(pool, p)).toEqual([
      "x [12:00,12:30)=1 merged 1 → [12:00,13:20)",
      "x [12:50,13:20)=10 merged 1 → [12:00,13:20)",
    ]);
  });

  it("a late event that bridges two final sessions is dropped by the stream and merged by the correction; reconcile agrees after", async () => {
    const { pool } = await getDb();
    const p = sessionPipeline("sessions-late-bridge");
    await landAndRun(pool, p, [
      ["a", "10:00", "x", 1],
      ["b", "10:50", "x", 10],
    ]);
    // y at 13:00 moves the watermark to 12:00: both x sessions end before it and are final.
    const closing = await landAndRun(pool, p, [["c", "13:00", "y", 1000]]);
    expect([closing!.nextWatermark, closing!.numRowsFinalized]).toEqual(["2024-05-01T12:00:00.000Z", 2]);
    // 10:25 + 30 min = 10:55 <= 12:00: late by Spark's rule, although it bridges [10:00,10:30) and [10:50,11:20).
    const late = await landAndRun(pool, p, [["d", "10:25", "x", 100]]);
    expect([late!.numRowsDroppedByWatermark, late!.numLateWindows, late!.numRowsUpdated]).toEqual([1, 1, 0]);
    expect(await sessions(pool, p)).toEqual([
      "x [10:00,10:30)=1/1 final",
      "x [10:50,11:20)=10/1 final",
      "y [13:00,13:30)=1000/1 open",
    ]);
    const awaiting = await pool.query(
      "SELECT window_start, window_end, dropped_rows FROM straggler.windows_awaiting_correction WHERE pipeline = $1",
      [p.name],
    );
    expect(awaiting.rows).toEqual([
      { window_start: "2024-05-01T10:25:00.000Z", window_end: "2024-05-01T10:55:00.000Z", dropped_rows: 1 },
    ]);

    const before = await reconcile(pool, p);
    expect(
      before.mismatches.map(
        (m) => `${time(m.windowStart)}-${time(m.windowEnd)} ${m.stored?.sum ?? "-"} → ${m.expected?.sum ?? "-"}`,
      ),
    ).toEqual(["10:00-10:30 1 → -", "10:00-11:20 - → 111", "10:50-11:20 10 → -"]);

    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect([run.status, run.error, run.windowsExamined, run.windowsChanged, run.eventsRecovered]).toEqual([
      "succeeded",
      null,
      1,
      3,
      1,
    ]);
    expect(run.changes.map((c) => ({ ...c, windowStart: time(c.windowStart), windowEnd: time(c.windowEnd) }))).toEqual([
      {
        groupKey: "x",
        windowStart: "10:00",
        windowEnd: "10:30",
        before: { count: 1, sum: "1", min: "1", max: "1" },
        after: { count: 0, sum: null, min: null, max: null },
        revision: 2,
        lateEventCount: 0,
        lateEventIds: [],
      },
      {
        groupKey: "x",
        windowStart: "10:00",
        windowEnd: "11:20",
        before: null,
        after: { count: 3, sum: "111", min: "1", max: "100" },
        revision: 2,
        lateEventCount: 1,
        lateEventIds: ["d"],
      },
      {
        groupKey: "x",
        windowStart: "10:50",
        windowEnd: "11:20",
        before: { count: 1, sum: "10", min: "10", max: "10" },
        after: { count: 0, sum: null, min: null, max: null },
        revision: 2,
        lateEventCount: 0,
        lateEventIds: [],
      },
    ]);
    expect(await sessions(pool, p)).toEqual(["x [10:00,11:20)=111/3 corrected", "y [13:00,13:30)=1000/1 open"]);
    expect(await retractions(pool, p)).toEqual([
      "x [10:00,10:30)=1 corrected run → [10:00,11:20)",
      "x [10:50,11:20)=10 corrected run → [10:00,11:20)",
    ]);
    // REST: the sessions like any window, the correction's audit, and the retractions a consumer follows by id.
    const api = await startApi({
      pool,
      pipelines: [p],
      log: createLogger("silent"),
      token: "test-token-0123456789abcdef",
    });
    try {
      const get = async (route: string) => (await fetch(`${api.base}/pipelines/${p.name}${route}`)).json();
      const rows = (await get("/windows?key=x")) as {
        window_start: string;
        window_end: string;
        value_sum: string;
        status: string;
        revision: number;
      }[];
      expect(
        rows.map((w) => `${time(w.window_start)}-${time(w.window_end)} ${w.value_sum} ${w.status} r${w.revision}`),
      ).toEqual(["10:00-11:20 111 corrected r2"]);
      const audit = (await get(`/corrections/${run.runId}`)) as {
        changes: { window_start: string; window_end: string; count_before: number | null; count_after: number }[];
      };
      expect(
        audit.changes.map(
          (c) => `${time(c.window_start)}-${time(c.window_end)} ${c.count_before ?? "-"}→${c.count_after}`,
        ),
      ).toEqual(["10:00-10:30 1→0", "10:00-11:20 -→3", "10:50-11:20 1→0"]);
      const all = (await get("/retractions")) as {
        id: number;
        window_start: string;
        reason: string;
        run_id: number | null;
      }[];
      expect(all.map((r) => [time(r.window_start), r.reason, r.run_id])).toEqual([
        ["10:00", "corrected", run.runId],
        ["10:50", "corrected", run.runId],
      ]);
      const next = (await get(`/retractions?after=${all[0]!.id}`)) as { window_start: string }[];
      expect(next.map((r) => time(r.window_start))).toEqual(["10:50"]);
      const bad = await fetch(`${api.base}/pipelines/${p.name}/retractions?after=-1`);
      expect([bad.status, await bad.json()]).toEqual([
        400,
        { error: "invalid_request", message: "query.after: expected an integer >= 0 (the last retraction id read)" },
      ]);
    } finally {
      await api.close();
    }
    const awaitingAfter = await pool.query(
      "SELECT count(*)::int AS n FROM straggler.windows_awaiting_correction WHERE pipeline = $1",
      [p.name],
    );
    expect(awaitingAfter.rows[0].n).toBe(0);

    const after = await reconcile(pool, p);
    expect([after.ok, after.windowsChecked, after.mismatches]).toEqual([true, 1, []]);
    // Sum over all session rows == sum over all accepted events: 1 + 10 + 1000 + 100.
    const sums = await pool.query(
      `SELECT (SELECT sum(value_sum) FROM straggler.window_results WHERE pipeline = $1) AS sessions,
              (SELECT sum(value) FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'accepted') AS events`,
      [p.name],
    );
    expect(sums.rows[0]).toEqual({ sessions: "1111", events: "1111" });
    // A second run finds nothing to change.
    const again = await runCorrection(pool, p, { trigger: "cli" });
    expect([again.windowsExamined, again.windowsChanged]).toEqual([0, 0]);
  });

  it("an on-time event whose own window touches a final session is dropped; the correction merges it with the open session it reaches, which stays open", async () => {
    const { pool } = await getDb();
    const p = sessionPipeline("sessions-touch-final");
    // w at 12:30 moves the watermark to 11:30: z's [11:00,11:30) ends at it and is final.
    const first = await landAndRun(pool, p, [
      ["a", "11:00", "z", 5],
      ["b", "12:30", "w", 0],
    ]);
    expect([first!.nextWatermark, first!.numRowsFinalized]).toEqual(["2024-05-01T11:30:00.000Z", 1]);
    // 11:20: its window ends at 11:50, after the watermark, but it starts inside the final [11:00,11:30): dropped.
    // 11:45: after 11:30, a new open session.
    const second = await landAndRun(pool, p, [
      ["c", "11:20", "z", 50],
      ["d", "11:45", "z", 500],
    ]);
    expect([second!.numRowsDroppedByWatermark, second!.numRowsUpdated]).toEqual([1, 1]);
    expect(await sessions(pool, p)).toEqual([
      "w [12:30,13:00)=0/1 open",
      "z [11:00,11:30)=5/1 final",
      "z [11:45,12:15)=500/1 open",
    ]);

    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect([run.windowsChanged, run.eventsRecovered]).toEqual([3, 1]);
    // [11:00, 12:15) ends after the watermark 11:30: written open, with the revision above the rows it replaces.
    expect(await sessions(pool, p)).toEqual(["w [12:30,13:00)=0/1 open", "z [11:00,12:15)=555/3 open"]);
    expect(await retractions(pool, p)).toEqual([
      "z [11:00,11:30)=5 corrected run → [11:00,12:15)",
      "z [11:45,12:15)=500 corrected run → [11:00,12:15)",
    ]);
    // The stream goes on with it: an event at 12:10 extends it, then the watermark closes it.
    await landAndRun(pool, p, [["e", "12:10", "z", 5000]]);
    await landAndRun(pool, p, [["f", "14:00", "w", 0]]);
    expect(await sessions(pool, p)).toEqual([
      "w [12:30,13:00)=0/1 final",
      "w [14:00,14:30)=0/1 open",
      "z [11:00,12:40)=5555/4 final",
    ]);
    const revision = await pool.query(
      "SELECT revision FROM straggler.window_results WHERE pipeline = $1 AND group_key = 'z'",
      [p.name],
    );
    expect(revision.rows).toEqual([{ revision: 2 }]);
    expect((await retractions(pool, p)).slice(2)).toEqual(["z [11:00,12:15)=555 extended 2 → [11:00,12:40)"]);
    const check = await reconcile(pool, p);
    expect([check.ok, check.windowsChecked]).toEqual([true, 2]);
  });

  it("a range recompute splits a stored session that bronze says is two, and changes nothing where the sessions are right", async () => {
    const { pool } = await getDb();
    const p = sessionPipeline("sessions-split");
    await landAndRun(pool, p, [
      ["a", "10:00", "x", 1],
      ["b", "10:50", "x", 10],
      ["c", "13:00", "y", 1000],
    ]);
    const same = await runCorrection(pool, p, {
      trigger: "cli",
      range: { from: "2024-05-01T09:00:00Z", to: "2024-05-01T12:00:00Z" },
    });
    expect([same.status, same.windowsExamined, same.windowsChanged]).toEqual(["succeeded", 2, 0]);
    // A stored session no stream would write: the two final sessions as one row.
    await pool.query(
      `WITH gone AS (DELETE FROM straggler.window_results_table WHERE pipeline = $1 AND group_key = 'x' RETURNING 1)
       INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final)
       SELECT $1, straggler.results_version($1), 'x', '2024-05-01T10:00:00Z', '2024-05-01T11:20:00Z', 2, 11, 1, 10, true FROM (SELECT count(*) FROM gone) g`,
      [p.name],
    );
    expect((await reconcile(pool, p)).mismatches).toHaveLength(3);
    const run = await runCorrection(pool, p, {
      trigger: "cli",
      range: { from: "2024-05-01T09:00:00Z", to: "2024-05-01T12:00:00Z" },
      keys: ["x"],
    });
    expect([run.status, run.windowsExamined, run.windowsChanged, run.eventsRecovered]).toEqual(["succeeded", 1, 3, 0]);
    expect(
      run.changes.map(
        (c) =>
          `${time(c.windowStart)}-${time(c.windowEnd)} ${c.before?.sum ?? "-"} → ${c.after.count === 0 ? "gone" : c.after.sum} r${c.revision}`,
      ),
    ).toEqual(["10:00-10:30 - → 1 r2", "10:00-11:20 11 → gone r2", "10:50-11:20 - → 10 r2"]);
    expect(await sessions(pool, p)).toEqual([
      "x [10:00,10:30)=1/1 corrected",
      "x [10:50,11:20)=10/1 corrected",
      "y [13:00,13:30)=1000/1 open",
    ]);
    expect(await retractions(pool, p)).toEqual(["x [10:00,11:20)=11 corrected run → [10:00,10:30)"]);
    expect((await reconcile(pool, p)).ok).toBe(true);
  });
});
