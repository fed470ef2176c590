/**
 * Landing straight into bronze under the pipeline's append lock: the rows of
 * one source take one contiguous run of the pipeline's sequence, concurrent
 * landings never interleave, and a producer that stalls (stdin) is spooled
 * first, so it holds up no other landing.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { analyzeIfStale } from "../../src/db/statistics.js";
import { DEDUPE_SQL } from "../../src/db/sql/ingest/dedupeLanding.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const dir = mkdtempSync(path.join(os.tmpdir(), "straggler-landing-test-"));

const jsonl = (name: string, extra: Record<string, unknown> = {}) =>
  pipeline({
    ...extra,
    name,
    source: { landingDir: dir, format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
  });

function writeEvents(name: string, prefix: string, n: number): string {
  const file = path.join(dir, name);
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({ id: `${prefix}${i}`, t: "2026-10-01T12:00:00Z", v: 1 }),
  );
  writeFileSync(file, lines.join("\n") + "\n");
  return file;
}

describe("landing into bronze", () => {
  it("three concurrent landings of one pipeline each take one contiguous, non-interleaved run of its sequence, in commit order", async () => {
    const { pool } = await getDb();
    const p = jsonl("contiguous");
    const files = ["a", "b", "c"].map((x) => writeEvents(`${x}.jsonl`, x, 20_000));
    const results = await Promise.all(files.map((f) => landFile(pool, p, f, path.basename(f))));
    expect(results.map((r) => r.landed)).toEqual([20_000, 20_000, 20_000]);
    const { rows } = await pool.query(
      `SELECT (SELECT name FROM straggler.bronze_sources WHERE id = source_id) AS source, min(seq) AS first, max(seq) AS last, count(*)::int AS n,
              min(source_line) AS first_line, max(source_line) AS last_line
         FROM straggler.bronze_events WHERE pipeline = $1 GROUP BY source_id ORDER BY min(seq)`,
      [p.name],
    );
    expect(rows).toHaveLength(3);
    for (const r of rows) {
      expect(r.last - r.first + 1).toBe(20_000);
      expect([r.n, r.first_line, r.last_line]).toEqual([20_000, 1, 20_000]);
      const ledger = results.find((x) => x.source === r.source)!;
      expect([ledger.firstSeq, ledger.lastSeq]).toEqual([r.first, r.last]);
    }
    expect(rows[1].first).toBeGreaterThan(rows[0].last);
    expect(rows[2].first).toBeGreaterThan(rows[1].last);
    // Lines are in sequence order within each source.
    const disorder = await pool.query(
      `SELECT count(*)::int AS n FROM (SELECT source_line - lag(source_line) OVER (PARTITION BY source_id ORDER BY seq) AS d
         FROM straggler.bronze_events WHERE pipeline = $1) x WHERE d <> 1`,
      [p.name],
    );
    expect(disorder.rows[0].n).toBe(0);
  });

  it("a stalled stream (stdin) is spooled first: another landing of the same pipeline completes while it waits", async () => {
    const { pool } = await getDb();
    const p = jsonl("spooled");
    const stdin = new PassThrough();
    stdin.write(JSON.stringify({ id: "s1", t: "2026-10-01T12:00:00Z", v: 1 }) + "\n");
    let streamDone = false;
    const streamed = landStream(pool, p, stdin, "stdin").finally(() => (streamDone = true));
    const other = await landFile(pool, p, writeEvents("other.jsonl", "o", 3), "other.jsonl");
    expect([other.landed, other.accepted, streamDone]).toEqual([3, 3, false]);
    stdin.end(JSON.stringify({ id: "s2", t: "2026-10-01T12:00:00Z", v: 2 }) + "\n");
    const s = await streamed;
    expect([s.landed, s.accepted, s.quarantined]).toEqual([2, 2, 0]);
    expect(s.firstSeq).toBeGreaterThan(other.lastSeq!);
    expect(s.lastSeq! - s.firstSeq!).toBe(1);
  });

  it("duplicates across and within landings: counts in the result and the ledger match bronze", async () => {
    const { pool } = await getDb();
    const p = jsonl("dedupe-counts");
    await landFile(pool, p, writeEvents("first.jsonl", "d", 5), "first.jsonl"); // d0..d4
    const file = path.join(dir, "second.jsonl");
    writeFileSync(
      file,
      ["d3", "x1", "x1", "d4", "x2", "x1"]
        .map((id) => JSON.stringify({ id, t: "2026-10-01T12:00:00Z", v: 1 }))
        .join("\n") + "\n",
    );
    const r = await landFile(pool, p, file, "second.jsonl");
    expect([r.landed, r.accepted, r.quarantined, r.byReason]).toEqual([6, 2, 4, { DUPLICATE: 4 }]);
    const { rows } = await pool.query(
      "SELECT source_line, status, reason FROM straggler.bronze_events WHERE pipeline = $1 AND source_id = (SELECT id FROM straggler.bronze_sources WHERE pipeline = $1 AND name = 'second.jsonl') ORDER BY seq",
      [p.name],
    );
    expect(rows.map((x) => `${x.source_line}:${x.reason ?? x.status}`)).toEqual([
      "1:DUPLICATE",
      "2:accepted",
      "3:DUPLICATE",
      "4:DUPLICATE",
      "5:accepted",
      "6:DUPLICATE",
    ]);
    const ledger = await pool.query(
      "SELECT rows, accepted, quarantined FROM straggler.landed_sources WHERE pipeline = $1 AND source = 'second.jsonl'",
      [p.name],
    );
    expect(ledger.rows[0]).toEqual({ rows: 6, accepted: 2, quarantined: 4 });
  });
});

describe("plans after a bulk landing", () => {
  it("the duplicate probe does not depend on statistics: with bronze analysed before a new pipeline landed, the update scans the (pipeline, seq) range and probes the event-id index once per row", async () => {
    const { pool } = await getDb();
    const old = jsonl("probe-old");
    await landFile(pool, old, writeEvents("probe-old.jsonl", "p", 5_000), "probe-old.jsonl");
    await pool.query("ANALYZE straggler.bronze_events");
    const fresh = jsonl("probe-new");
    await landFile(pool, fresh, writeEvents("probe-new.jsonl", "q", 5_000), "probe-new.jsonl");
    const { rows } = await pool.query(`EXPLAIN (FORMAT JSON) ${DEDUPE_SQL}`, [fresh.name, 5_000]);
    const plan = JSON.stringify(rows[0]["QUERY PLAN"]);
    const scans = [...plan.matchAll(/"Index Name":"([^"]+)"/g)].map((m) => m[1]);
    // Bronze is partitioned by landing month (drizzle/0023): the rows are in this month's partition,
    // read by its (pipeline, seq) index and probed by its event-id index; the partitions without rows (next
    // month's, the DEFAULT one) are empty tables, scanned as such. The event-id index holds the event id's
    // 64-bit key alone (drizzle/0050): the probe checks the id, pipeline and seq on the row it points to.
    const hot = `bronze_events_p${new Date().toISOString().slice(0, 7).replace("-", "")}`;
    expect(scans).toEqual([`${hot}_pipeline_seq_idx`, `${hot}_event_id_high_event_id_low_idx`]);
    // straggler.event_id_high and event_id_low inlined: the id's two keys on each side (the outer row's alias as "b").
    const conds = [
      ...plan.matchAll(/"Index Name":"[^"]+_event_id_high_event_id_low_idx"[^{}]*?"Index Cond":"((?:[^"\\]|\\.)*)"/g),
    ].map((m) => JSON.parse(`"${m[1]}"`).replace(/b_\d+\./g, "b.") as string);
    const high = (col: string) => `hashtext("left"(${col}, '-4'::integer))`;
    const code = (col: string, back: number) =>
      `ascii(substr(${col}, ${back === 0 ? `length(${col})` : `(length(${col}) - ${back})`}, 1))`;
    const low = (col: string) =>
      `((((${code(col, 3)} << 24) | (${code(col, 2)} << 16)) | (${code(col, 1)} << 8)) | ${code(col, 0)})`;
    expect(conds).toEqual([
      `((${high("event_id")} = ${high("b.event_id")}) AND (${low("event_id")} = ${low("b.event_id")}))`,
    ]);
    expect(plan).toMatch(
      /"Filter":"\(\(seq < b_\d+\.seq\) AND \(event_id = b_\d+\.event_id\) AND \(\(pipeline \|\| ''::text\) = 'probe-new'::text\)\)"/,
    );
    const seqScanned = new Set(
      [...plan.matchAll(/"Node Type":"Seq Scan",[^{}]*?"Relation Name":"([^"]+)"/g)].map((m) => m[1]),
    );
    const { rows: empty } = await pool.query(
      "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'straggler.bronze_events'::regclass AND c.relname <> $1",
      [hot],
    );
    expect([...seqScanned].sort()).toEqual(empty.map((r) => r.relname as string).sort());
    for (const name of seqScanned)
      expect((await pool.query(`SELECT count(*)::int AS n FROM straggler.${name}`)).rows[0].n).toBe(0);
  });

  it("a landing larger than one micro-batch refreshes bronze's pipeline statistics before it commits; a smaller one does not", async () => {
    const { pool } = await getDb();
    const small = (name: string) => jsonl(name, { trigger: { maxRowsPerBatch: 1_000 } });
    await landFile(pool, small("stats-old"), writeEvents("stats-old.jsonl", "s", 500), "stats-old.jsonl");
    await pool.query("ANALYZE straggler.bronze_events");
    const mcv = async () =>
      (
        await pool.query(
          "SELECT most_common_vals::text::text[] AS v FROM pg_stats WHERE schemaname = 'straggler' AND tablename = 'bronze_events' AND attname = 'pipeline'",
        )
      ).rows[0].v;
    // The test database is shared by this file's tests: look only at this test's pipelines.
    const ours = async () => ((await mcv()) as string[]).filter((v) => v.startsWith("stats-")).sort();
    expect(await ours()).toEqual(["stats-old"]);
    await landFile(pool, small("stats-few"), writeEvents("stats-few.jsonl", "f", 999), "stats-few.jsonl");
    expect(await ours()).toEqual(["stats-old"]);
    await landFile(pool, small("stats-many"), writeEvents("stats-many.jsonl", "m", 1_000), "stats-many.jsonl");
    expect(await ours()).toEqual(["stats-few", "stats-many", "stats-old"]);
  });

  it("a pipeline estimated at ~0 rows that has 10,000 or more gets its statistics refreshed by analyzeIfStale; the table-wide 10 % rule alone would miss it", async () => {
    const { pool } = await getDb();
    await landFile(pool, jsonl("under-old"), writeEvents("under-old.jsonl", "u", 100_000), "under-old.jsonl");
    await pool.query("ANALYZE straggler.bronze_events");
    const fresh = jsonl("under-new");
    const landBatch = async (i: number) =>
      landFile(pool, fresh, writeEvents(`under-new-${i}.jsonl`, `n${i}-`, 1_000), `under-new-${i}.jsonl`);
    for (let i = 0; i < 9; i++) await landBatch(i);
    expect(await analyzeIfStale(pool, fresh.name)).toEqual([]);
    await landBatch(9);
    expect(await analyzeIfStale(pool, fresh.name)).toEqual(["straggler.bronze_events (pipeline, seq)"]);
    expect(await analyzeIfStale(pool, fresh.name)).toEqual([]);
  });
});
