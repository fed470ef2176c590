/**
 * What keeps a small micro-batch cheap (issue 15): the replay reads its
 * staged records page by page without holding a snapshot open, and the
 * batch's pairs table is estimated from its size, so that the MERGE probes
 * the results by key instead of reading every window of the pipeline.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { windowSpecOf } from "../../src/core/pipelineSpec.js";
import { createPool, inTransaction, rollback } from "../../src/db/pool.js";
import { BATCH_PAIRS } from "../../src/db/sql/fragments/batchPairs.js";
import { mergeSql } from "../../src/db/sql/stream/mergeWindows.js";
import { ensureBatchPairs, readBatch } from "../../src/db/sql/stream/readBatch.js";
import {
  copyReplayRows,
  createReplayRows,
  dropReplayRows,
  indexReplayRows,
  readReplayPage,
  replayLine,
} from "../../src/db/sql/ingest/stageReplayRows.js";
import { landFile } from "../../src/ingest/landFile.js";
import { replay } from "../../src/replay/replay.js";
import { refreshResultsEstimate } from "../../src/db/statistics.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { runUntilCaughtUp } from "../../src/stream/streamLoop.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const dir = mkdtempSync(path.join(tmpdir(), "straggler-microbatch-"));

describe("replay staging read by key", () => {
  it("pages of 2 return every staged record once, in arrival order: unknown arrival first, then instant, µs, file, line, and staging order for a record staged twice", async () => {
    const { pool } = await getDb();
    const client = await pool.connect();
    try {
      await createReplayRows(client);
      const staged: [[number, number] | null, string, number][] = [
        [[2000, 5], "b.csv", 1],
        [null, "b.csv", 7],
        [[1000, 0], "b.csv", 2],
        [[2000, 5], "a.csv", 9],
        [[2000, 4], "c.csv", 1],
        [null, "a.csv", 3],
        [[1000, 0], "a.csv", 2],
        [[2000, 5], "a.csv", 9], // the same file given twice
        [[-5000, 0], "a.csv", 1], // before 1970
      ];
      await copyReplayRows(
        client,
        (async function* () {
          for (const [arrival, origin, line] of staged)
            yield replayLine({
              arrival_ms: arrival?.[0] ?? null,
              arrival_sub_ms: arrival?.[1] ?? null,
              origin,
              line,
              raw: `${origin}:${line}`,
              parse_error: null,
              fields: {},
              numbers: null,
            });
        })(),
      );
      await indexReplayRows(client);
      const seen: string[] = [];
      let page = await readReplayPage(client, null, 2);
      while (page.length > 0) {
        expect(page.length).toBeLessThanOrEqual(2);
        seen.push(...page.map((r) => `${r.arrival_ms ?? "-"}.${r.arrival_sub_ms ?? "-"} ${r.raw} #${r.ord}`));
        page = await readReplayPage(client, page[page.length - 1]!, 2);
      }
      expect(seen).toEqual([
        "-.- a.csv:3 #6",
        "-.- b.csv:7 #2",
        "-5000.0 a.csv:1 #9",
        "1000.0 a.csv:2 #7",
        "1000.0 b.csv:2 #3",
        "2000.4 c.csv:1 #5",
        "2000.5 a.csv:9 #4",
        "2000.5 a.csv:9 #8",
        "2000.5 b.csv:1 #1",
      ]);
    } finally {
      await dropReplayRows(client);
      client.release();
    }
  });

  it("no session holds a snapshot between two spans of a replay (a snapshot held open keeps every old row version the stream writes); each span's micro-batch reads that span's rows only, though the next span lands meanwhile", async () => {
    const { pool } = await getDb();
    const file = path.join(dir, "spans.csv");
    const lines = ["id,t,arrived,v"];
    for (let i = 0; i < 30; i++)
      lines.push(
        `e${i},2024-01-15T${String(i % 24).padStart(2, "0")}:01:00Z,2024-01-15T${String(i % 24).padStart(2, "0")}:02:00Z,${i}`,
      );
    writeFileSync(file, lines.join("\n") + "\n");
    const p = pipeline({
      name: "no-snapshot",
      source: { landingDir: dir, format: "csv" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "1 hour" },
      watermark: { delay: "1 hour" },
    });
    const checks: Promise<number>[] = [];
    const spans: string[] = [];
    const summary = await replay(pool, p, {
      files: [file],
      arrivalField: "arrived",
      batchSpanMs: 3_600_000,
      onBatch: ({ land, batches }) => {
        // Each span's micro-batch reads that span's rows only, though the next span lands meanwhile.
        spans.push(batches.map((b) => `${b.endOffset - land.lastSeq!}:${b.numInputRows}/${land.accepted}`).join(" "));
        // The staging session (its last statement read replay_rows, or a cursor over them) idle inside a transaction.
        checks.push(
          pool
            .query(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND query ~ 'replay_(rows|cursor)'",
            )
            .then(({ rows }) => rows[0].n as number),
        );
      },
    });
    expect(summary.replayBatches).toBe(24);
    expect(summary.rowsLanded).toBe(30);
    expect(await Promise.all(checks)).toEqual(Array(24).fill(0));
    // Spans of one hour: hours 0-5 hold 2 events, the others 1.
    expect(spans).toEqual(Array.from({ length: 24 }, (_, h) => (h < 6 ? "0:2/2" : "0:1/1")));
  });
});

describe("a replay resumed", () => {
  it("lands only the spans the interrupted run did not, streams the one it landed without streaming, and ends with the windows of a replay run once", async () => {
    const { pool } = await getDb();
    const file = path.join(dir, "resume.csv");
    const lines = ["id,t,arrived,v"];
    for (let i = 0; i < 30; i++)
      lines.push(
        `r${i},2024-01-15T${String(i % 24).padStart(2, "0")}:01:00Z,2024-01-15T${String(i % 24).padStart(2, "0")}:02:00Z,${i}`,
      );
    writeFileSync(file, lines.join("\n") + "\n");
    const config = (name: string) =>
      pipeline({
        name,
        source: { landingDir: dir, format: "csv" },
        fields: { eventId: "id", eventTime: "t", value: "v" },
        window: { type: "tumbling", size: "1 hour" },
        watermark: { delay: "1 hour" },
      });
    const opts = { files: [file], arrivalField: "arrived", batchSpanMs: 3_600_000 };
    let spans = 0;
    // The third span's stream fails: the fourth has landed meanwhile (a span lands while the one before it streams).
    await expect(
      replay(pool, config("resumed"), {
        ...opts,
        onBatch: () => {
          if (++spans === 3) throw new Error("interrupted");
        },
      }),
    ).rejects.toThrow("interrupted");
    const resumed = await replay(pool, config("resumed"), opts);
    expect([resumed.skippedBatches, resumed.replayBatches, resumed.rowsLanded, resumed.duplicateRows]).toEqual([
      4, 20, 22, 0,
    ]);
    const once = await replay(pool, config("once"), opts);
    expect([once.skippedBatches, once.replayBatches, once.rowsLanded]).toEqual([0, 24, 30]);
    const windows = async (name: string) =>
      (
        await pool.query(
          `SELECT group_key, window_start, event_count, value_sum, is_final FROM straggler.window_results_table WHERE pipeline = $1 ORDER BY 1, 2`,
          [name],
        )
      ).rows;
    const resumedWindows = await windows("resumed");
    expect(resumedWindows.length).toBe(24);
    expect(resumedWindows.reduce((n, w) => n + Number(w.event_count), 0)).toBe(30);
    expect(resumedWindows).toEqual(await windows("once"));
  });
});

describe("a micro-batch bounded by untilSeq", () => {
  it("reads no bronze row past untilSeq: the first of two landings alone, then nothing, then the second without the bound", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "until-seq",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
    });
    const land = async (name: string, ids: number[]) => {
      const file = path.join(dir, name);
      writeFileSync(
        file,
        ids.map((i) => JSON.stringify({ id: `u${i}`, t: `2024-01-15T12:0${i}:00Z`, v: i })).join("\n") + "\n",
      );
      return landFile(pool, p, file, name);
    };
    const first = await land("until-1.jsonl", [1, 2, 3]);
    const second = await land("until-2.jsonl", [4, 5]);
    const a = await runBatch(pool, p, "replay", { untilSeq: first.lastSeq! });
    expect([a?.endOffset === first.lastSeq, a?.numInputRows]).toEqual([true, 3]);
    expect(await runBatch(pool, p, "replay", { untilSeq: first.lastSeq! })).toBeNull();
    const b = await runBatch(pool, p, "replay");
    expect([b?.startOffset === first.lastSeq, b?.endOffset === second.lastSeq, b?.numInputRows]).toEqual([
      true,
      true,
      2,
    ]);
  });
});

describe("the MERGE of a small batch", () => {
  it("estimates the pairs table from its size and probes the results by key: 10 pairs into a pipeline of 30,000 windows", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "merge-plan",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "1 minute" },
      watermark: { delay: "1 hour" },
      admission: { maxFutureSkew: null },
    });
    // 30,000 stored windows of the pipeline, as a long stream leaves them (version 0: no version is live yet; the batch below records one and they take its number).
    await pool.query(
      `INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, last_batch_id)
       SELECT $1, 0, 'k' || (i % 10), timestamptz '2024-01-01' + (i / 10) * interval '1 minute', timestamptz '2024-01-01' + (i / 10 + 1) * interval '1 minute', 1, 1, 1, 1, 0
         FROM generate_series(0, 29999) i`,
      [p.name],
    );
    await pool.query("ANALYZE straggler.window_results_table");
    const file = path.join(dir, "ten.jsonl");
    writeFileSync(
      file,
      Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: `m${i}`, t: `2024-01-03T00:0${i}:30Z`, v: i })).join(
        "\n",
      ) + "\n",
    );
    const landed = await landFile(pool, p, file, "ten.jsonl");
    const client = await pool.connect();
    try {
      await ensureBatchPairs(client);
      // Without the change feed and with it (feed.enabled: a CTE beside the MERGE reads the same windows).
      const plans = await inTransaction(client, async () => {
        const read = await readBatch(client, p.name, {
          afterSeq: landed.firstSeq! - 1,
          maxRows: 1000,
          windows: { spec: windowSpecOf(p), watermarkUs: null },
        });
        expect([read?.range.lastSeq === landed.lastSeq, read?.input.numInputRows, read?.latePairs]).toEqual([
          true,
          10,
          0,
        ]);
        expect((await client.query(`SELECT count(*)::int AS n FROM ${BATCH_PAIRS}`)).rows[0].n).toBe(10);
        const explain = async (feed: boolean) =>
          (await client.query(`EXPLAIN (FORMAT JSON) ${mergeSql(feed)}`, [p.name, 1, null])).rows[0]["QUERY PLAN"][0]
            .Plan;
        return rollback([await explain(false), await explain(true)]);
      });
      const probe = "Index Scan window_results_table_pkey";
      for (const [plan, probes] of [
        [plans[0], [probe]],
        [plans[1], [probe, probe]],
      ] as const) {
        const nodes: { "Node Type": string; "Relation Name"?: string; "Index Name"?: string; "Plan Rows": number }[] =
          [];
        const walk = (n: any) => {
          nodes.push(n);
          for (const c of n.Plans ?? []) walk(c);
        };
        walk(plan);
        const pairsScan = nodes.find((n) => n["Relation Name"] === BATCH_PAIRS)!;
        // A never-analysed table is taken for 10 pages (about 700 pairs, 350 after the late filter).
        expect(pairsScan["Plan Rows"]).toBeLessThan(100);
        const results = nodes.filter(
          (n) => n["Relation Name"] === "window_results_table" && n["Node Type"].endsWith("Scan"),
        );
        expect(results.map((n) => `${n["Node Type"]} ${n["Index Name"]}`)).toEqual(probes);
      }
    } finally {
      client.release();
    }
    // And the batch itself: its 10 windows are new.
    const progress = await runBatch(pool, p, "once");
    expect(progress?.numRowsUpdated).toBe(10);
  });
});

describe("the results' estimate of a pipeline new since the last ANALYZE", () => {
  it("is refreshed once the pipeline has 1,000 windows estimated at under a quarter of them, and then left alone", async () => {
    const { pool } = await getDb();
    const windows = (name: string, from: number, n: number) =>
      pool.query(
        `INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, last_batch_id)
       SELECT $1, 0, 'k', timestamptz '2024-01-01' + i * interval '1 minute', timestamptz '2024-01-01' + (i + 1) * interval '1 minute', 1, 1, 1, 1, 0
         FROM generate_series($2::int, $3::int) i`,
        [name, from, from + n - 1],
      );
    await windows("estimate-old", 0, 20_000);
    await pool.query("ANALYZE straggler.window_results_table");
    await windows("estimate-new", 0, 999);
    expect(await refreshResultsEstimate(pool, "estimate-new")).toBe(false); // 999 windows: not checked
    await windows("estimate-new", 999, 1);
    expect(await refreshResultsEstimate(pool, "estimate-new")).toBe(true);
    expect(await refreshResultsEstimate(pool, "estimate-new")).toBe(false);
    const plan = await pool.query(
      "EXPLAIN (FORMAT JSON) SELECT 1 FROM straggler.window_results_table WHERE pipeline = 'estimate-new'",
    );
    expect(Number(plan.rows[0]["QUERY PLAN"][0].Plan["Plan Rows"])).toBeGreaterThanOrEqual(250);
  });
});

describe("the results' estimate of a pipeline's live windows (drizzle/0051: the results keyed by version)", () => {
  it("is taken as the stream's statements name them: with the version's statistics missing it is refreshed, then left alone", async () => {
    const { pool } = await getDb();
    const live = (name: string) =>
      pool
        .query(
          `EXPLAIN (FORMAT JSON) SELECT 1 FROM straggler.window_results_table WHERE pipeline = $1 AND version = (SELECT straggler.results_version($1))`,
          [name],
        )
        .then((plan) => Number(plan.rows[0]["QUERY PLAN"][0].Plan["Plan Rows"]));
    await pool.query(
      `INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, last_batch_id)
       SELECT 'estimate-live', 0, 'k', timestamptz '2024-01-01' + i * interval '1 minute', timestamptz '2024-01-01' + (i + 1) * interval '1 minute', 1, 1, 1, 1, 0
         FROM generate_series(0, 3999) i`,
    );
    // As a replay into a new database left it before: the pipeline column analysed, the version column never.
    await pool.query("ANALYZE straggler.window_results_table (pipeline)");
    await pool.query(
      "DELETE FROM pg_statistic WHERE starelid = 'straggler.window_results_table'::regclass AND staattnum = (SELECT attnum FROM pg_attribute WHERE attrelid = 'straggler.window_results_table'::regclass AND attname = 'version')",
    );
    // One row in 200 of the pipeline's estimate: PostgreSQL's default for an equality it has no statistics for. The
    // pipeline's own estimate comes from a sample when the table holds more rows than ANALYZE reads (this file's other
    // pipelines, autovacuum under load), so it is read, not assumed to be the 4,000 rows inserted.
    const pipelineRows = await pool
      .query(`EXPLAIN (FORMAT JSON) SELECT 1 FROM straggler.window_results_table WHERE pipeline = $1`, [
        "estimate-live",
      ])
      .then((plan) => Number(plan.rows[0]["QUERY PLAN"][0].Plan["Plan Rows"]));
    expect(pipelineRows).toBeGreaterThan(2000);
    // Within one row: both estimates are rounded apart.
    expect(Math.abs((await live("estimate-live")) - pipelineRows / 200)).toBeLessThanOrEqual(1);
    expect(await refreshResultsEstimate(pool, "estimate-live")).toBe(true);
    // The version's distinct values now known (this file's other pipelines hold other versions): at least the quarter
    // of the windows that refreshResultsEstimate asks for, and a MERGE probes the batch's windows by key.
    expect(await live("estimate-live")).toBeGreaterThanOrEqual(1000);
    expect(await refreshResultsEstimate(pool, "estimate-live")).toBe(false);
  });
});

describe("the round trips of a micro-batch", () => {
  it("a batch with no late pair and no superseded version is BEGIN with the results lock and the checkpoint's read, readBatch, the MERGE, closeBatch and COMMIT; a late pair adds its one statement", async () => {
    const { url } = await getDb();
    const pool = createPool(url, 1); // one connection: every batch after the first finds its pairs table made
    const statements: string[] = [];
    pool.on("acquire", (client) => {
      const marked = client as unknown as { counted?: boolean; query: (...a: unknown[]) => unknown };
      if (marked.counted) return;
      marked.counted = true;
      const query = marked.query.bind(client);
      marked.query = (q: unknown, ...rest: unknown[]) => {
        const c = q as { name?: string; text?: string } | string;
        statements.push(
          typeof c === "string"
            ? c.split(/\s/)[0]!
            : (c.name?.replace(/_[0-9a-f]{12}$/, "") ?? c.text!.split(/\s/)[0]!),
        );
        return query(q, ...rest);
      };
    });
    try {
      const p = pipeline({
        name: "round-trips",
        source: { format: "jsonl" },
        fields: { eventId: "id", eventTime: "t", value: "v" },
        window: { type: "tumbling", size: "10 minutes" },
        watermark: { delay: "10 minutes" },
        admission: { maxFutureSkew: null },
      });
      const land = async (name: string, events: [string, string][]) => {
        const file = path.join(dir, name);
        writeFileSync(file, events.map(([id, t]) => JSON.stringify({ id, t, v: 1 })).join("\n") + "\n");
        await landFile(pool, p, file, name);
      };
      await land("rt-1.jsonl", [
        ["a", "2024-01-15T12:01:00Z"],
        ["b", "2024-01-15T12:31:00Z"],
      ]);
      expect((await runBatch(pool, p, "once"))?.numInputRows).toBe(2); // records the policy, creates the checkpoint and the pairs table
      await land("rt-2.jsonl", [
        ["c", "2024-01-15T12:32:00Z"],
        ["d", "2024-01-15T12:33:00Z"],
      ]);
      statements.length = 0;
      const second = await runBatch(pool, p, "once");
      expect([second?.numInputRows, second?.numRowsDroppedByWatermark]).toEqual([2, 0]);
      // BEGIN, the lock and the checkpoint's read (openBatchText) are one simple query: five round trips.
      expect(statements).toEqual(["BEGIN;", "read_batch_agg", "merge", "close_batch_merged_final", "COMMIT"]);
      await land("rt-3.jsonl", [
        ["e", "2024-01-15T12:02:00Z"],
        ["f", "2024-01-15T12:34:00Z"],
      ]);
      statements.length = 0;
      const third = await runBatch(pool, p, "once");
      expect([third?.numInputRows, third?.numRowsDroppedByWatermark, third?.numLateWindows]).toEqual([2, 1, 1]);
      expect(statements).toEqual(["BEGIN;", "read_batch_agg", "late", "merge", "close_batch_merged_final", "COMMIT"]);
      // Caught up (2 rows of at most 100,000): the loop runs no batch more that would find nothing.
      await land("rt-4.jsonl", [
        ["g", "2024-01-15T12:35:00Z"],
        ["h", "2024-01-15T12:36:00Z"],
      ]);
      statements.length = 0;
      const loop = await runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");
      expect(loop.map((b) => b.numInputRows)).toEqual([2]);
      expect(statements.filter((s) => s === "BEGIN;").length).toBe(1);
    } finally {
      await pool.end();
    }
  });
});
