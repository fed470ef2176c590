/**
 * Bronze's indexes after migration 0029 (drizzle/0029_lean_bronze_indexes.sql, BENCHMARKS.md
 * "Lean bronze: indexes"): exactly the intended set on the partitioned table and on each
 * partition, and the landing's dedupe, whose event-id index no longer holds pipeline and seq,
 * still finds an earlier accepted version across two landings and across partitions, and only
 * an accepted one of the same pipeline.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runMigrations, runMigrationsKeeping } from "../../src/db/migrate.js";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { useTestDatabase, withFreshDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const dir = mkdtempSync(path.join(os.tmpdir(), "straggler-lean-bronze-test-"));

const jsonl = (name: string) =>
  pipeline({
    name,
    source: { landingDir: dir, format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
  });

/** Writes one JSON line per record to `name` in the landing folder and lands it as the source `name`. */
function landLines(pool: Pool, p: PipelineConfig, name: string, records: Record<string, unknown>[]) {
  const file = path.join(dir, name);
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return landFile(pool, p, file, name);
}

/** This month's partition of bronze, as `tableoid::regclass` names it. */
const HOT = `straggler.bronze_events_p${new Date().toISOString().slice(0, 7).replace("-", "")}`;

const at = "2026-10-01T12:00:00Z";

/** Bronze's index names on the partitioned table, sorted. */
const indexNames = async (pool: Pool) =>
  (
    await pool.query(
      "SELECT indexname FROM pg_indexes WHERE schemaname = 'straggler' AND tablename = 'bronze_events' ORDER BY indexname",
    )
  ).rows.map((r) => r.indexname as string);
const LEAN = [
  "bronze_events_accepted_event_key",
  "bronze_events_event_time_brin",
  "bronze_events_key_event_time",
  "bronze_events_pipeline_seq",
];

/** Each row of `source` in `pipeline`, by seq: its event id, status or reason, and the partition holding it. */
async function rowsOf(pool: Pool, pipelineName: string, source: string): Promise<string[]> {
  const { rows } = await pool.query(
    "SELECT event_id, coalesce(reason, status) AS s, tableoid::regclass::text AS part FROM straggler.bronze_events WHERE pipeline = $1 AND source_id = (SELECT id FROM straggler.bronze_sources WHERE pipeline = $1 AND name = $2) ORDER BY seq",
    [pipelineName, source],
  );
  return rows.map((r) => `${r.event_id}:${r.s}@${r.part}`);
}

/** Moves `pipeline`'s rows of `source` to the partition of `landedAt` (made when missing). Fixture only: the raw columns never change otherwise. */
async function moveToMonth(pool: Pool, pipelineName: string, source: string, landedAt: string): Promise<void> {
  await pool.query("SELECT straggler.ensure_bronze_partitions($1::date, $1::date)", [landedAt.slice(0, 10)]);
  const c = await pool.connect();
  try {
    await c.query("SET session_replication_role = replica"); // the bronze_raw_unchanged trigger stays off for this statement
    await c.query(
      "UPDATE straggler.bronze_events SET landed_at = $3 WHERE pipeline = $1 AND source_id = (SELECT id FROM straggler.bronze_sources WHERE pipeline = $1 AND name = $2)",
      [pipelineName, source, landedAt],
    );
    await c.query("RESET session_replication_role");
  } finally {
    c.release();
  }
}

describe("bronze's indexes after migrations 0029, 0038, 0048 and 0050", () => {
  it("the partitioned table has exactly the (pipeline, seq) index, BRIN (event_time), the partial (group_key, event_time) correction index and the partial index on the event id's 64-bit key; no primary key; every partition has the same four", async () => {
    const { pool } = await getDb();
    const { rows } = await pool.query(
      "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'straggler' AND tablename = 'bronze_events' ORDER BY indexname",
    );
    expect(rows).toEqual([
      {
        indexname: "bronze_events_accepted_event_key",
        indexdef:
          "CREATE INDEX bronze_events_accepted_event_key ON ONLY straggler.bronze_events USING btree (straggler.event_id_high(event_id), straggler.event_id_low(event_id)) WHERE (status = 'accepted'::text)",
      },
      {
        indexname: "bronze_events_event_time_brin",
        indexdef: "CREATE INDEX bronze_events_event_time_brin ON ONLY straggler.bronze_events USING brin (event_time)",
      },
      {
        indexname: "bronze_events_key_event_time",
        indexdef:
          "CREATE INDEX bronze_events_key_event_time ON ONLY straggler.bronze_events USING btree (group_key, event_time) WHERE (status = 'accepted'::text)",
      },
      {
        indexname: "bronze_events_pipeline_seq",
        indexdef: "CREATE INDEX bronze_events_pipeline_seq ON ONLY straggler.bronze_events USING btree (pipeline, seq)",
      },
    ]);
    expect(
      (
        await pool.query(
          "SELECT count(*)::int AS n FROM pg_constraint WHERE conrelid = 'straggler.bronze_events'::regclass AND contype IN ('p', 'u')",
        )
      ).rows[0].n,
    ).toBe(0);
    // A partition made later (as the service makes next month's) gets the four too, attached to the parent's.
    await pool.query("SELECT straggler.ensure_bronze_partitions('2001-01-01', '2001-01-01')");
    const parts = await pool.query(
      `SELECT c.relname AS part, array_agg(pi.relname ORDER BY pi.relname)::text[] AS parents
         FROM pg_inherits t JOIN pg_class c ON c.oid = t.inhrelid
         JOIN pg_index x ON x.indrelid = c.oid
         JOIN pg_inherits ii ON ii.inhrelid = x.indexrelid JOIN pg_class pi ON pi.oid = ii.inhparent
        WHERE t.inhparent = 'straggler.bronze_events'::regclass
        GROUP BY c.relname ORDER BY c.relname`,
    );
    const names = rows.map((r) => r.indexname as string);
    expect(parts.rows.map((r) => r.part)).toContain("bronze_events_p200101");
    for (const r of parts.rows) expect(r.parents).toEqual(names);
    const counts = await pool.query(
      `SELECT c.relname AS part, count(x.indexrelid)::int AS n FROM pg_inherits t JOIN pg_class c ON c.oid = t.inhrelid
         JOIN pg_index x ON x.indrelid = c.oid WHERE t.inhparent = 'straggler.bronze_events'::regclass GROUP BY c.relname`,
    );
    for (const r of counts.rows) expect([r.part, r.n]).toEqual([r.part, 4]);
    // Every partition's btrees fill their leaf pages, the one made just now too (0048), but for the 3 % the event-id
    // index and the correction index leave for late events (0050; by name, then pipeline_seq); the BRIN has none.
    const fill = await pool.query(
      `SELECT c.relname AS part, array_agg(a.amname || ':' || coalesce(array_to_string(ic.reloptions, ','), '-') ORDER BY a.amname, ic.relname)::text[] AS opts
         FROM pg_inherits t JOIN pg_class c ON c.oid = t.inhrelid JOIN pg_index x ON x.indrelid = c.oid
         JOIN pg_class ic ON ic.oid = x.indexrelid JOIN pg_am a ON a.oid = ic.relam
        WHERE t.inhparent = 'straggler.bronze_events'::regclass GROUP BY c.relname`,
    );
    expect(fill.rows.map((r) => r.part)).toContain("bronze_events_p200101");
    for (const r of fill.rows)
      expect([r.part, r.opts]).toEqual([
        r.part,
        ["brin:-", "btree:fillfactor=97", "btree:fillfactor=97", "btree:fillfactor=100"],
      ]);
  });
});

describe("migrations 0029 and 0038 on a bronze with rows", () => {
  it("replace the index set of 0023 with the lean one, keeps every row, and a landing after it finds an accepted row landed before it as DUPLICATE", async () => {
    await withFreshDatabase(async (pool) => {
      await runMigrationsKeeping(pool, (idx) => idx <= 27);
      expect(await indexNames(pool)).toEqual([
        "bronze_events_accepted_event_id_seq",
        "bronze_events_pipeline_event_time",
        "bronze_events_pipeline_key_event_time",
        "bronze_events_pipeline_seq",
        "bronze_events_seq_landed_at_pk",
      ]);
      const p = jsonl("lean-migrated");
      // Two rows as that release landed them (its source by name): b1 accepted, b2 without an event time.
      await pool.query(
        `INSERT INTO straggler.bronze_events (pipeline, policy_version, source, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, reason)
         VALUES ($1, 'v', 'before.jsonl', 1, 'b1', '{"id":"b1"}', $2, $2, '', 1, 'accepted', NULL), ($1, 'v', 'before.jsonl', 2, 'b2', '{"id":"b2"}', NULL, $2, '', 2, 'quarantined', 'NO_TS')`,
        [p.name, at],
      );
      await runMigrations(pool);
      expect(await indexNames(pool)).toEqual(LEAN);
      const rows = await pool.query("SELECT event_id, status FROM straggler.bronze_events ORDER BY seq");
      expect(rows.rows).toEqual([
        { event_id: "b1", status: "accepted" },
        { event_id: "b2", status: "quarantined" },
      ]);
      const r = await landLines(pool, p, "after.jsonl", [
        { id: "b1", t: at, v: 1 },
        { id: "b2", t: at, v: 2 },
      ]);
      expect([r.landed, r.accepted, r.quarantined, r.byReason]).toEqual([2, 1, 1, { DUPLICATE: 1 }]);
      expect(
        (
          await pool.query(
            "SELECT event_id, coalesce(reason, status) AS s FROM straggler.bronze_events WHERE source_id = (SELECT id FROM straggler.bronze_sources WHERE pipeline = 'lean-migrated' AND name = 'after.jsonl') ORDER BY seq",
          )
        ).rows,
      ).toEqual([
        { event_id: "b1", s: "DUPLICATE" },
        { event_id: "b2", s: "accepted" },
      ]);
    });
  });
});

describe("the dedupe with the narrower event-id index", () => {
  it("the event-id keys (0050): ids that differ only in their last 4 characters share the high key, the low one is those characters' codes; a short and a non-ASCII id are keyed and deduped alike", async () => {
    const { pool } = await getDb();
    const ids = ["e1230000", "e1239999", "e1240000", "ab", "abcd", "ünïcødé-0001", "ünïcødé-0002"];
    const { rows } = await pool.query(
      `SELECT id, straggler.event_id_high(id) AS high, to_hex(straggler.event_id_low(id)) AS low
         FROM unnest($1::text[]) WITH ORDINALITY AS x(id, o) ORDER BY o`,
      [ids],
    );
    const high = Object.fromEntries(rows.map((r) => [r.id as string, r.high as number]));
    expect(rows.map((r) => r.low)).toEqual([
      "30303030",
      "39393939",
      "30303030",
      "6162",
      "61626364",
      "30303031",
      "30303032",
    ]);
    expect(high["e1239999"]).toBe(high["e1230000"]);
    expect(high["e1240000"]).not.toBe(high["e1230000"]);
    expect(high["abcd"]).toBe(high["ab"]); // both shorter than 5 characters: no prefix
    expect(high["ünïcødé-0002"]).toBe(high["ünïcødé-0001"]);
    expect(high["ünïcødé-0001"]).not.toBe(high["e1230000"]);
    // Two ids with the same keys: the heap row's id decides.
    const same = await pool.query(
      "SELECT straggler.event_id_high('Aa') = straggler.event_id_high('䅡') AS high, straggler.event_id_low('Aa') = straggler.event_id_low('䅡') AS low",
    );
    expect(same.rows[0]).toEqual({ high: true, low: true });

    const p = jsonl("lean-dedupe-key");
    await landLines(pool, p, "k1.jsonl", [
      { id: "ab", t: at, v: 1 },
      { id: "ünïcødé-0001", t: at, v: 2 },
      { id: "Aa", t: at, v: 5 },
    ]);
    const r = await landLines(pool, p, "k2.jsonl", [
      { id: "ünïcødé-0001", t: at, v: 2 },
      { id: "ünïcødé-0002", t: at, v: 3 },
      { id: "abcd", t: at, v: 4 },
      { id: "ab", t: at, v: 1 },
      { id: "䅡", t: at, v: 5 },
    ]);
    expect([r.landed, r.accepted, r.quarantined, r.byReason]).toEqual([5, 3, 2, { DUPLICATE: 2 }]);
    expect(await rowsOf(pool, p.name, "k2.jsonl")).toEqual([
      `ünïcødé-0001:DUPLICATE@${HOT}`,
      `ünïcødé-0002:accepted@${HOT}`,
      `abcd:accepted@${HOT}`,
      `ab:DUPLICATE@${HOT}`,
      `䅡:accepted@${HOT}`,
    ]);
  });

  it("finds an accepted version landed by an earlier landing, in this month's partition and in an older partition; the first version stays accepted", async () => {
    const { pool } = await getDb();
    const p = jsonl("lean-dedupe");
    await landLines(pool, p, "old.jsonl", [
      { id: "o1", t: at, v: 1 },
      { id: "o2", t: at, v: 2 },
    ]);
    await moveToMonth(pool, p.name, "old.jsonl", "2026-01-15T00:00:00Z");
    await landLines(pool, p, "recent.jsonl", [{ id: "r1", t: at, v: 3 }]);
    expect(await rowsOf(pool, p.name, "old.jsonl")).toEqual([
      "o1:accepted@straggler.bronze_events_p202601",
      "o2:accepted@straggler.bronze_events_p202601",
    ]);
    expect(await rowsOf(pool, p.name, "recent.jsonl")).toEqual([`r1:accepted@${HOT}`]);

    const r = await landLines(pool, p, "again.jsonl", [
      { id: "o2", t: at, v: 2 },
      { id: "r1", t: at, v: 3 },
      { id: "n1", t: at, v: 4 },
    ]);
    expect([r.landed, r.accepted, r.quarantined, r.byReason]).toEqual([3, 1, 2, { DUPLICATE: 2 }]);
    expect(await rowsOf(pool, p.name, "again.jsonl")).toEqual([
      `o2:DUPLICATE@${HOT}`,
      `r1:DUPLICATE@${HOT}`,
      `n1:accepted@${HOT}`,
    ]);
    expect(await rowsOf(pool, p.name, "old.jsonl")).toEqual([
      "o1:accepted@straggler.bronze_events_p202601",
      "o2:accepted@straggler.bronze_events_p202601",
    ]);
    expect(await rowsOf(pool, p.name, "recent.jsonl")).toEqual([`r1:accepted@${HOT}`]);
  });

  it("takes neither another pipeline's accepted row nor a quarantined row of its own pipeline for an earlier version; copies within one landing keep the first", async () => {
    const { pool } = await getDb();
    const a = jsonl("lean-dedupe-a");
    const b = jsonl("lean-dedupe-b");
    await landLines(pool, a, "a.jsonl", [{ id: "x1", t: at, v: 1 }]);
    await landLines(pool, b, "b1.jsonl", [{ id: "x2", v: 1 }]); // no event time: quarantined
    const r = await landLines(pool, b, "b2.jsonl", [
      { id: "x1", t: at, v: 1 },
      { id: "x2", t: at, v: 1 },
      { id: "x2", t: at, v: 1 },
    ]);
    expect([r.landed, r.accepted, r.quarantined, r.byReason]).toEqual([3, 2, 1, { DUPLICATE: 1 }]);
    expect(await rowsOf(pool, b.name, "b2.jsonl")).toEqual([
      `x1:accepted@${HOT}`,
      `x2:accepted@${HOT}`,
      `x2:DUPLICATE@${HOT}`,
    ]);
    expect((await rowsOf(pool, b.name, "b1.jsonl"))[0]).toMatch(/^x2:[A-Z_]+@/);
    expect(await rowsOf(pool, a.name, "a.jsonl")).toEqual([`x1:accepted@${HOT}`]);
  });
});
