/**
 * Window results keyed by results version, the live one a pointer
 * (drizzle/0051): every version's windows are in `window_results_table`
 * under its number, `straggler.results_version(pipeline)` names the live
 * one, and a cutover or a rollback moves the pointer without writing a
 * window row.
 */
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { cutover } from "../../src/lifecycle/cutover.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { deleteVersion } from "../../src/db/sql/lifecycle/rebuildRuns.js";
import { useTestDatabase } from "../helpers/db.js";
import { futureOutlier } from "../helpers/fixtures.js";
import { windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

/** Each stored window row of `name` as `v<version> <start> n=<count> <ctid>/<xmin>`: a row rewritten gets a new ctid and xmin. */
async function physical(pool: Pool, name: string): Promise<string[]> {
  const { rows } = await pool.query(
    `SELECT version, to_char(window_start AT TIME ZONE 'UTC', 'HH24:MI') AS ws, event_count AS n, ctid::text AS ctid, xmin::text AS xmin
       FROM straggler.window_results_table WHERE pipeline = $1 ORDER BY version, window_start`,
    [name],
  );
  return rows.map((r) => `v${r.version} ${r.ws} n=${r.n} ${r.ctid}/${r.xmin}`);
}

const liveVersion = async (pool: Pool, name: string) =>
  (await pool.query("SELECT straggler.results_version($1) AS v", [name])).rows[0].v as number;

describe("results keyed by version (drizzle/0051)", () => {
  it("seed future-outlier: the candidate's windows sit beside the live ones; a cutover and a rollback move the pointer and rewrite no window row; the stream and a correction write the live version's rows only", async () => {
    const { pool } = await getDb();
    const control = futureOutlier(false, "by-version");
    const guarded = futureOutlier(true, "by-version");
    expect(await liveVersion(pool, control.name)).toBe(0);
    for (const file of ["batch1.csv", "batch2.csv", "batch3.csv"]) {
      await landFile(pool, control, path.join(control.source.landingDir!, file), file);
      await runBatch(pool, control, "once");
    }
    expect(await liveVersion(pool, control.name)).toBe(1);
    expect((await rebuild(pool, guarded)).version).toBe(2);
    const built = await physical(pool, control.name);
    // Version 1 (live): the stream's [12:00,12:10) without its 2 late rows, row 4's 14:00 window; version 2 (the
    // guard, recomputed whole from its rows): row 4 is FUTURE_TS, [12:00,12:10) holds its late rows.
    expect(built.map((r) => r.split(" ").slice(0, 3).join(" "))).toEqual([
      "v1 12:00 n=3",
      "v1 14:00 n=1",
      "v2 12:00 n=5",
    ]);

    const cut = await cutover(pool, guarded, 2);
    expect([cut.windows, cut.reclassifiedRows, cut.caughtUpRows]).toEqual([1, 1, 0]);
    expect(await liveVersion(pool, control.name)).toBe(2);
    // Not one window row written: the same rows, at the same places, by the same transactions.
    expect(await physical(pool, control.name)).toEqual(built);
    // The guard's watermark ignores row 4's future time: [12:00,12:10) is still open under it.
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=5 open"]);
    const byVersion = await pool.query(
      "SELECT version, state, count(*)::int AS n FROM straggler.window_results_by_version WHERE pipeline = $1 GROUP BY 1, 2 ORDER BY 1",
      [control.name],
    );
    expect(byVersion.rows).toEqual([
      { version: 1, state: "retired", n: 2 },
      { version: 2, state: "live", n: 1 },
    ]);

    const back = await cutover(pool, control, 1);
    expect([back.rollback, back.windows, back.caughtUpRows]).toEqual([true, 2, 0]);
    expect(await physical(pool, control.name)).toEqual(built);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);

    // Cut over again, then a correction of the live version (2) over the whole range: version 1's rows stay as they were.
    await cutover(pool, guarded, 2);
    const retired = built.filter((r) => r.startsWith("v1 "));
    const lines = "RawID,EventTimestampRaw,IngestionTime,Payload\n7,2026-09-19T12:09:00Z,2026-09-19T12:16:00Z,7\n";
    await landStream(pool, guarded, Readable.from([lines]), "late", Date.parse("2026-09-19T12:16:00Z"));
    expect((await runBatch(pool, guarded, "once"))?.numRowsUpdated).toBe(1);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=6 open"]);
    const run = await runCorrection(pool, guarded, {
      trigger: "cli",
      range: { from: "2026-09-19T11:00:00Z", to: "2026-09-19T16:00:00Z" },
    });
    expect(run.status).toBe("succeeded");
    expect((await physical(pool, control.name)).filter((r) => r.startsWith("v1 "))).toEqual(retired);
    expect(await reconcile(pool, guarded)).toMatchObject({ ok: true, mismatches: [] });

    // Removing a version never removes the live one's rows; the retired one's go.
    const live = await physical(pool, control.name);
    await deleteVersion(pool, control.name, 2);
    expect(await physical(pool, control.name)).toEqual(live);
    await deleteVersion(pool, control.name, 1);
    expect((await physical(pool, control.name)).map((r) => r.split(" ").slice(0, 3).join(" "))).toEqual([
      "v2 12:00 n=6",
    ]);
  });

  it("windows written while no version is live are version 0's, shown by window_results, and take the number of the first version recorded", async () => {
    const { pool } = await getDb();
    const p = futureOutlier(false, "by-version-zero");
    await pool.query(
      `INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max)
       VALUES ($1, 0, '', '2026-09-19T10:00:00Z', '2026-09-19T10:10:00Z', 2, 5, 2, 3)`,
      [p.name],
    );
    const shown = async () =>
      (
        await pool.query(
          "SELECT window_start, event_count::int AS n, results_version FROM straggler.window_results WHERE pipeline = $1 ORDER BY window_start",
          [p.name],
        )
      ).rows.map((r) => `${new Date(r.window_start).toISOString()} n=${r.n} v=${r.results_version}`);
    expect(await shown()).toEqual(["2026-09-19T10:00:00.000Z n=2 v=null"]);
    await landFile(pool, p, path.join(p.source.landingDir!, "batch1.csv"), "batch1.csv");
    await runBatch(pool, p, "once");
    const versions = await pool.query(
      "SELECT version, count(*)::int AS n FROM straggler.window_results_table WHERE pipeline = $1 GROUP BY 1 ORDER BY 1",
      [p.name],
    );
    expect(versions.rows).toEqual([{ version: 1, n: 2 }]);
    expect(await shown()).toEqual(["2026-09-19T10:00:00.000Z n=2 v=1", "2026-09-19T12:00:00.000Z n=2 v=1"]);
  });
});
