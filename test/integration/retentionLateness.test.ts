/**
 * Retention and the kept lateness histogram (docs/lateness.md "Retention"): archiving a partition
 * leaves the histogram as it was — it keeps counting the archived rows, as the ledger does
 * (`bronze_archived_counts`) — so the advisor answers as before; the replay (`--exact`), which
 * reads bronze, misses them until the archive is restored, and then agrees again.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { latenessAdvice } from "../../src/observe/latenessAdvice.js";
import { runArchive } from "../../src/retention/archive.js";
import { restoreArchive } from "../../src/retention/restore.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { retentionPipeline } from "../helpers/retention.js";

const getDb = useTestDatabase();

const HOUR = 3_600_000,
  DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();
const now = new Date();
/** The first instants (UTC) of the month before last and of last month; the events start 15 days before last month. */
const m2 = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1);
const m1 = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1);
const S = m1 - 15 * DAY;
const partName = (ms: number) => `bronze_events_p${iso(ms).slice(0, 7).replace("-", "")}`;

/** Sets each row's landed_at as if it had landed 5 minutes after its event time (fixture only; the raw-column trigger off). */
async function backdate(pool: Pool, name: string): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query("SET session_replication_role = replica");
    await c.query(
      "UPDATE straggler.bronze_events SET landed_at = event_time + interval '5 minutes' WHERE pipeline = $1",
      [name],
    );
    await c.query("RESET session_replication_role");
  } finally {
    c.release();
  }
}

const histogramRows = async (pool: Pool, name: string) =>
  (
    await pool.query(
      "SELECT measure, value::text, rows::int FROM straggler.lateness_histogram WHERE pipeline = $1 ORDER BY measure, value",
      [name],
    )
  ).rows;

describe("retention and the kept lateness histogram", () => {
  it("archived: the histogram unchanged and the advisor's answer the same; the replay misses the archived rows until they are restored", async () => {
    const { pool } = await getDb();
    const work = mkdtempSync(path.join(os.tmpdir(), "straggler-retention-lateness-"));
    const landing = path.join(work, "landing"),
      archive = path.join(work, "archive");
    mkdirSync(landing);
    const p = {
      ...retentionPipeline(landing, archive, "ret-lateness"),
      lateness: { histogram: true },
      trigger: { ...retentionPipeline(landing, archive).trigger, maxRowsPerBatch: 40 },
    };
    await pool.query("SELECT straggler.ensure_bronze_partitions($1::date, $2::date)", [
      iso(m2).slice(0, 10),
      iso(m1).slice(0, 10),
    ]);
    // 30 days × 5 events (hours 1-5), streamed in batches of 40 rows.
    const lines = Array.from({ length: 30 }, (_, d) =>
      Array.from({ length: 5 }, (_, j) => ({ id: `e-${d}-${j}`, t: iso(S + d * DAY + (j + 1) * HOUR), k: "a", v: 1 })),
    )
      .flat()
      .map((o) => JSON.stringify(o));
    writeFileSync(path.join(landing, "month.jsonl"), lines.join("\n") + "\n");
    await landFile(pool, p, path.join(landing, "month.jsonl"), "month.jsonl");
    await backdate(pool, p.name);
    while (await runBatch(pool, p, "once"));

    const kept = await latenessAdvice(pool, p, { delaysMs: [0] });
    const exact = await latenessAdvice(pool, p, { delaysMs: [0], exact: true });
    expect([kept.source, kept.distribution.count, kept.whatIf.batches]).toEqual(["histogram", 150, 4]);
    expect(kept.distribution).toEqual(exact.distribution);
    const before = await histogramRows(pool, p.name);

    const run = await runArchive(pool, [p], { includeRestored: true });
    expect(run.archived.map((a) => [a.partition, a.rows])).toEqual([[partName(m2), 75]]);
    // The histogram keeps the archived rows, as the ledger's counts do: the advisor's answer is the one before.
    expect(await histogramRows(pool, p.name)).toEqual(before);
    expect(await latenessAdvice(pool, p, { delaysMs: [0] })).toEqual(kept);
    // The replay reads bronze: the archived half is gone from it.
    expect((await latenessAdvice(pool, p, { delaysMs: [0], exact: true })).distribution.count).toBe(75);

    await restoreArchive(pool, path.join(archive, `${partName(m2)}.${p.name}.manifest.json`));
    expect(await histogramRows(pool, p.name)).toEqual(before);
    expect((await latenessAdvice(pool, p, { delaysMs: [0], exact: true })).distribution).toEqual(kept.distribution);
  }, 120_000);
});
