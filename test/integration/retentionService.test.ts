/**
 * The service's retention tick (src/retention/schedule.ts): it makes this month's and next
 * month's bronze partitions, archives what is past the horizon, and leaves a restored
 * partition alone (README "Retention and archives").
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { restoreArchive } from "../../src/retention/restore.js";
import { startRetention } from "../../src/retention/schedule.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { runUntilCaughtUp } from "../../src/stream/streamLoop.js";
import { useTestDatabase } from "../helpers/db.js";
import { retentionPipeline } from "../helpers/retention.js";

const getDb = useTestDatabase();
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const now = new Date();
const monthName = (y: number, m: number) =>
  `bronze_events_p${iso(Date.UTC(y, m, 1))
    .slice(0, 7)
    .replace("-", "")}`;
const m2 = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1);
const m1 = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1);
const exists = async (pool: Pool, table: string) =>
  (await pool.query("SELECT to_regclass($1) IS NOT NULL AS e", [`straggler.${table}`])).rows[0].e as boolean;

describe("the service's retention tick", () => {
  it("makes next month's partition, archives the partition past the horizon, and leaves a restored partition alone", async () => {
    const { pool } = await getDb();
    const work = mkdtempSync(path.join(os.tmpdir(), "straggler-retention-svc-"));
    const landing = path.join(work, "landing"),
      archive = path.join(work, "archive");
    mkdirSync(landing);
    const p = retentionPipeline(landing, archive, "svc");
    const next = monthName(now.getUTCFullYear(), now.getUTCMonth() + 1),
      old = monthName(now.getUTCFullYear(), now.getUTCMonth() - 2);
    await pool.query(`DROP TABLE straggler.${next}`); // as if the service had not run for a month
    await pool.query("SELECT straggler.ensure_bronze_partitions($1::date, $2::date)", [
      iso(m2).slice(0, 10),
      iso(m1).slice(0, 10),
    ]);
    // Two days of events in the month before last, one day last month: the first two are past a 10-day horizon.
    const S = m1 - 2 * DAY;
    const lines = [0, 1, 20].map((d) =>
      JSON.stringify({ id: `s-${d}`, t: iso(S + d * DAY + 3_600_000), k: "a", v: d }),
    );
    writeFileSync(path.join(landing, "days.jsonl"), lines.join("\n") + "\n");
    await landFile(pool, p, path.join(landing, "days.jsonl"), "days.jsonl");
    const c = await pool.connect();
    await c.query("SET session_replication_role = replica"); // fixture: landed_at as if landed then (the raw-column trigger off for this session only)
    await c.query(
      "UPDATE straggler.bronze_events SET landed_at = event_time + interval '5 minutes' WHERE pipeline = 'svc'",
    );
    c.release();
    await runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");

    const log = createLogger("silent");
    await startRetention(pool, [p], log, 3_600_000).stop(); // the first tick runs at start; stop() awaits it
    expect(await exists(pool, next)).toBe(true);
    expect(await exists(pool, old)).toBe(false);
    const manifest = path.join(archive, `${old}.svc.manifest.json`);
    expect(existsSync(manifest)).toBe(true);
    expect(
      (await pool.query("SELECT landed::int, accepted::int FROM straggler.ledger WHERE pipeline = 'svc'")).rows,
    ).toEqual([{ landed: 3, accepted: 3 }]);

    expect((await restoreArchive(pool, manifest)).rows).toBe(2);
    await startRetention(pool, [p], log, 3_600_000).stop();
    expect(await exists(pool, old)).toBe(true);
    expect((await pool.query(`SELECT count(*)::int AS n FROM straggler.${old}`)).rows[0].n).toBe(2);
  });
});
