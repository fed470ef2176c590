/**
 * A cutover writes the rows whose classification differs, not the ledger
 * (drizzle/0037, src/db/sql/lifecycle/versionSwap.ts): a stored version keeps
 * its difference from bronze; the other stored versions are marked again at
 * every cutover; a retired version catching up takes from bronze the rows of
 * its own that its dedupe reads.
 */
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { Pool } from "../../src/db/pool.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { cutover } from "../../src/lifecycle/cutover.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { futureOutlier } from "../helpers/fixtures.js";
import { windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

/** Rows stored per version: held, and marked as differing from bronze. */
async function stored(pool: Pool, name: string): Promise<string[]> {
  const { rows } = await pool.query(
    "SELECT version, count(*)::int AS held, count(*) FILTER (WHERE differs)::int AS marked FROM straggler.event_classifications WHERE pipeline = $1 GROUP BY version ORDER BY version",
    [name],
  );
  return rows.map((r) => `v${r.version} held ${r.held} marked ${r.marked}`);
}

const quarantine = async (pool: Pool, name: string) =>
  (
    await pool.query("SELECT event_id, reason FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq", [name])
  ).rows.map((r) => `${r.event_id} ${r.reason}`);

describe("cutover by difference", () => {
  it("seed future-outlier: the swap stores and rewrites the one differing row; a candidate built before another cutover and a retired version that catches up (its dedupe reading rows it did not hold) serve what their policy gives", async () => {
    const { pool } = await getDb();
    const control = futureOutlier(false, "cut-diff");
    const guarded: PipelineConfig = futureOutlier(true, "cut-diff");
    for (const file of ["batch1.csv", "batch2.csv", "batch3.csv"]) {
      await landFile(pool, control, path.join(control.source.landingDir!, file), file);
      await runBatch(pool, control, "once");
    }
    const controlWindows = await windowSummary(pool, control.name, "count");
    expect(controlWindows).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
    // Two candidates: the guard (row 4 becomes FUTURE_TS: the one row marked), and the live policy again (none marked).
    expect((await rebuild(pool, guarded)).version).toBe(2);
    expect((await rebuild(pool, control)).version).toBe(3);
    expect(await stored(pool, control.name)).toEqual(["v2 held 6 marked 1", "v3 held 6 marked 0"]);

    const cut = await cutover(pool, guarded, 2);
    expect([cut.reclassifiedRows, cut.caughtUpRows]).toEqual([1, 0]);
    // Version 1 (retired) holds only the row the swap rewrote; version 3 is marked again against the new bronze.
    expect(await stored(pool, control.name)).toEqual([
      "v1 held 1 marked 1",
      "v2 held 6 marked 0",
      "v3 held 6 marked 1",
    ]);
    expect(await quarantine(pool, control.name)).toEqual(["4 FUTURE_TS"]);

    // Landed and streamed under version 2: a new row, a re-send of row 4 (FUTURE_TS again) and one of row 1 (DUPLICATE).
    const lines =
      "RawID,EventTimestampRaw,IngestionTime,Payload\n7,2026-09-19T12:09:00Z,2026-09-19T12:16:00Z,7\n4,2026-09-19T14:00:00Z,2026-09-19T12:16:00Z,25\n1,2026-09-19T12:00:00Z,2026-09-19T12:16:00Z,10\n";
    await landStream(pool, guarded, Readable.from([lines]), "late", Date.parse("2026-09-19T12:16:00Z"));
    await runBatch(pool, guarded, "once");
    expect(await quarantine(pool, control.name)).toEqual(["4 FUTURE_TS", "4 FUTURE_TS", "1 DUPLICATE"]);

    // Roll back to version 1, which catches up first: its dedupe finds row 4 (which it holds) and row 1 (from bronze).
    const back = await cutover(pool, control, 1);
    expect([back.rollback, back.caughtUpRows, back.reclassifiedRows]).toEqual([true, 3, 2]);
    expect(await quarantine(pool, control.name)).toEqual(["4 DUPLICATE", "1 DUPLICATE"]);
    const rolledBack = await windowSummary(pool, control.name, "count");
    // Row 7 came after version 1's watermark (13:55) had closed [12:00,12:10): its catch-up corrects it.
    expect(rolledBack).toEqual(["[12:00,12:10)=6 corrected", "[14:00,14:10)=1 open"]);
    expect(await reconcile(pool, control)).toMatchObject({
      ok: true,
      mismatches: [],
      ledger: { landed: 9, accepted: 7, quarantined: 2, balanced: true },
    });

    // Version 3, built before both cutovers, catches up and classifies as version 1 does: no row rewritten.
    const again = await cutover(pool, control, 3);
    expect([again.rollback, again.caughtUpRows, again.reclassifiedRows]).toEqual([false, 3, 0]);
    expect(await windowSummary(pool, control.name, "count")).toEqual(rolledBack);
    expect(await quarantine(pool, control.name)).toEqual(["4 DUPLICATE", "1 DUPLICATE"]);
    expect(await reconcile(pool, control)).toMatchObject({
      ok: true,
      mismatches: [],
      ledger: { landed: 9, accepted: 7, quarantined: 2, balanced: true },
    });
  });
});
