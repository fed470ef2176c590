/**
 * The ledger's kept counts (drizzle/0043_ledger_counts.sql, src/db/sql/observe/ledgerCounts.ts): the status
 * and /metrics read them instead of counting bronze, so after every write that lands or reclassifies rows
 * they equal bronze's count (the view `straggler.ledger` and the quarantine by reason, as the status read
 * them before): a landing with quarantined rows and duplicates, a failing window's quarantine, a cutover
 * and its rollback, a drop; the migration counts the rows landed before it once.
 */
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { Pool } from "../../src/db/pool.js";
import { runMigrations, runMigrationsBefore } from "../../src/db/migrate.js";
import { readLedgerCounts } from "../../src/db/sql/observe/ledgerCounts.js";
import { readPipelineMetrics } from "../../src/db/sql/observe/readPipelineMetrics.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { cutover } from "../../src/lifecycle/cutover.js";
import { dropPipeline } from "../../src/lifecycle/drop.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
import { pipelineStatus } from "../../src/stream/status.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase, withFreshDatabase } from "../helpers/db.js";
import { futureOutlier, pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const LANDED = Date.UTC(2024, 0, 15, 12, 30);

/** The ledger as counted from bronze and the archives not restored (what the status read before the kept counts). */
async function counted(pool: Pool, name: string) {
  const l = (
    await pool.query("SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = $1", [
      name,
    ])
  ).rows[0] ?? { landed: 0, accepted: 0, quarantined: 0 };
  const r = await pool.query(
    `SELECT reason, sum(n)::int AS n FROM (SELECT reason, count(*) AS n FROM straggler.quarantine WHERE pipeline = $1 GROUP BY reason
       UNION ALL SELECT reason, rows FROM straggler.archived_rows WHERE pipeline = $1 AND status = 'quarantined') t GROUP BY reason ORDER BY reason`,
    [name],
  );
  return {
    ...l,
    quarantinedByReason: Object.fromEntries(r.rows.map((x: { reason: string; n: number }) => [x.reason, x.n])),
  };
}

/** The status's ledger (the kept counts), checked against bronze's count and /metrics' figures. */
async function kept(pool: Pool, name: string) {
  const s = (await pipelineStatus(pool, name)).ledger;
  expect(s).toEqual(await counted(pool, name));
  const [m] = await readPipelineMetrics(pool, [name]);
  expect({ landed: m!.landed, accepted: m!.accepted, quarantinedByReason: m!.quarantinedByReason }).toEqual({
    landed: s.landed,
    accepted: s.accepted,
    quarantinedByReason: s.quarantinedByReason,
  });
  return s;
}

function orders(name: string, dedupe: "first" | "latest"): PipelineConfig {
  return pipeline({
    name,
    source: { landingDir: `/nonexistent/${name}`, format: "jsonl" },
    fields: { eventId: "id", eventTime: "event_time", value: "amount", groupKey: ["k"] },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { dedupe },
  });
}
const ev = (id: string, k: string, t: string, amount: string) =>
  `{"id":"${id}","k":"${k}","event_time":"2024-01-15T${t}:00Z","amount":${amount}}`;
const land = (pool: Pool, p: PipelineConfig, source: string, ...lines: string[]) =>
  landStream(pool, p, Readable.from([lines.join("\n") + "\n"]), source, LANDED);

describe("the ledger's kept counts", () => {
  it("a landing adds its counts, its duplicates and bad rows by reason, under dedupe first and latest; a window whose aggregate fails moves its rows to INVALID_VALUE; drop removes them", async () => {
    const { pool } = await getDb();
    const first = orders("lc-first", "first");
    await land(
      pool,
      first,
      "a",
      ev("e1", "a", "12:01", "1"),
      ev("e2", "a", "12:02", "2"),
      "not json",
      `{"id":"e3","k":"a","amount":3}`,
    );
    expect(await kept(pool, first.name)).toEqual({
      landed: 4,
      accepted: 2,
      quarantined: 2,
      quarantinedByReason: { MALFORMED: 1, NULL_TS: 1 },
    });
    await land(
      pool,
      first,
      "b",
      ev("e1", "a", "12:01", "1"),
      ev("e2", "a", "12:02", "20"),
      ev("e4", "b", "12:03", "4"),
    );
    expect(await kept(pool, first.name)).toEqual({
      landed: 7,
      accepted: 3,
      quarantined: 4,
      quarantinedByReason: { AMENDED_DUPLICATE: 1, MALFORMED: 1, DUPLICATE: 1, NULL_TS: 1 },
    });

    const latest = orders("lc-latest", "latest");
    await land(
      pool,
      latest,
      "a",
      ev("l1", "a", "12:01", "1"),
      ev("l1", "a", "12:01", "1"),
      ev("l1", "a", "12:01", "5"),
    );
    expect(await kept(pool, latest.name)).toEqual({
      landed: 3,
      accepted: 2,
      quarantined: 1,
      quarantinedByReason: { DUPLICATE: 1 },
    });

    // Two rows accepted under an older policy without the value bound (their landing recorded by hand) overflow their window's sum:
    // its four accepted rows are quarantined (the batch counts the four quarantined at landing too).
    for (const [i, id] of ["big1", "big2"].entries()) {
      await pool.query(
        `INSERT INTO straggler.bronze_events (pipeline, source_id, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status)
         VALUES ($1, straggler.bronze_source_id($1, 'old'), $2, $3, '{}', '2024-01-15T12:05:00Z', '2024-01-15T12:30:00Z', 'a', 9e131071, 'accepted')`,
        [first.name, i + 1, id],
      );
    }
    await pool.query(
      "INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined) VALUES ($1, 'old', 'x', 2, 2, 0)",
      [first.name],
    );
    expect(await kept(pool, first.name)).toEqual({
      landed: 9,
      accepted: 5,
      quarantined: 4,
      quarantinedByReason: { AMENDED_DUPLICATE: 1, MALFORMED: 1, DUPLICATE: 1, NULL_TS: 1 },
    });
    const batch = await runBatch(pool, first, "once");
    expect(batch?.numQuarantinedRows).toBe(8);
    expect(await kept(pool, first.name)).toEqual({
      landed: 9,
      accepted: 1,
      quarantined: 8,
      quarantinedByReason: { AMENDED_DUPLICATE: 1, MALFORMED: 1, DUPLICATE: 1, INVALID_VALUE: 4, NULL_TS: 1 },
    });

    await dropPipeline(pool, first.name);
    expect(await kept(pool, first.name)).toEqual({ landed: 0, accepted: 0, quarantined: 0, quarantinedByReason: {} });
    expect((await readLedgerCounts(pool, [latest.name])).get(latest.name)!.landed).toBe(3);
  });

  it("a cutover and its rollback move the rows they reclassify (seed future-outlier: row 4 FUTURE_TS under the guard, back to accepted, re-sends DUPLICATE)", async () => {
    const { pool } = await getDb();
    const control = futureOutlier(false, "lc-cut");
    const guarded = futureOutlier(true, "lc-cut");
    for (const file of ["batch1.csv", "batch2.csv", "batch3.csv"]) {
      await landFile(pool, control, path.join(control.source.landingDir!, file), file);
      await runBatch(pool, control, "once");
    }
    expect(await kept(pool, control.name)).toEqual({ landed: 6, accepted: 6, quarantined: 0, quarantinedByReason: {} });
    expect((await rebuild(pool, guarded)).version).toBe(2);
    expect((await cutover(pool, guarded, 2)).reclassifiedRows).toBe(1);
    expect(await kept(pool, control.name)).toEqual({
      landed: 6,
      accepted: 5,
      quarantined: 1,
      quarantinedByReason: { FUTURE_TS: 1 },
    });
    const lines =
      "RawID,EventTimestampRaw,IngestionTime,Payload\n7,2026-09-19T12:09:00Z,2026-09-19T12:16:00Z,7\n4,2026-09-19T14:00:00Z,2026-09-19T12:16:00Z,25\n1,2026-09-19T12:00:00Z,2026-09-19T12:16:00Z,10\n";
    await landStream(pool, guarded, Readable.from([lines]), "late", Date.parse("2026-09-19T12:16:00Z"));
    await runBatch(pool, guarded, "once");
    expect(await kept(pool, control.name)).toEqual({
      landed: 9,
      accepted: 6,
      quarantined: 3,
      quarantinedByReason: { DUPLICATE: 1, FUTURE_TS: 2 },
    });
    const back = await cutover(pool, control, 1);
    expect([back.caughtUpRows, back.reclassifiedRows]).toEqual([3, 2]);
    expect(await kept(pool, control.name)).toEqual({
      landed: 9,
      accepted: 7,
      quarantined: 2,
      quarantinedByReason: { DUPLICATE: 2 },
    });
  });

  it("migration 0043 counts the rows landed before it once; landings after it add theirs", async () => {
    await withFreshDatabase(async (pool) => {
      await runMigrationsBefore(pool, 43);
      const p = orders("lc-migrated", "first");
      // Landed as the release before 0043 wrote bronze (by SQL: today's landing writes columns that later
      // migrations add, such as 0045's raw_at): an accepted row, a malformed line, a duplicate of the first.
      await pool.query(
        `INSERT INTO straggler.bronze_events (source_id, pipeline, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, reason, detail)
         SELECT straggler.bronze_source_id($1, 'before'), $1, n, id, raw, et::timestamptz, $3::timestamptz, k, v::numeric, st, r, d
           FROM (VALUES (1, 'm1', $2, '2024-01-15T12:01:00Z', 'a', '1', 'accepted', NULL, NULL),
                        (2, 'before:2', 'not json', NULL, '', NULL, 'quarantined', 'MALFORMED', 'not a JSON object'),
                        (3, 'm1', $2, '2024-01-15T12:01:00Z', 'a', '1', 'quarantined', 'DUPLICATE', 'event id m1 landed before')
                ) AS x(n, id, raw, et, k, v, st, r, d)`,
        [p.name, ev("m1", "a", "12:01", "1"), new Date(LANDED).toISOString()],
      );
      await runMigrations(pool);
      expect(await kept(pool, p.name)).toEqual({
        landed: 3,
        accepted: 1,
        quarantined: 2,
        quarantinedByReason: { MALFORMED: 1, DUPLICATE: 1 },
      });
      await land(pool, p, "after", ev("m2", "a", "12:02", "2"), ev("m1", "a", "12:01", "1"));
      expect(await kept(pool, p.name)).toEqual({
        landed: 5,
        accepted: 2,
        quarantined: 3,
        quarantinedByReason: { MALFORMED: 1, DUPLICATE: 2 },
      });
    });
  });
});
