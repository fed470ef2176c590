/**
 * Session retractions are bounded (README "Session windows"): a micro-batch that retracts rows of
 * a key into a session prunes the stream's earlier retractions of that key whose removed row lies
 * inside the new session, so 50 keys extended over 20 micro-batches keep 50 retractions, not 950.
 * Nothing a consumer needs is lost: a consumer that follows the retractions by id (each retracts
 * the row it names and every row of its key inside its replacement) and then reads the results
 * holds exactly the live results, from wherever it last stopped. The migration compacts what
 * earlier versions kept by the same rule.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { Pool } from "../../src/db/pool.js";
import { landStream } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { sessionOrders, REPO_ROOT } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

/** Sessions with a 30-minute gap per `k`, delay 1 day. */
const sessionPipeline = (name: string): PipelineConfig => sessionOrders(name, "1 day");

let sources = 0;
/** Lands `[id, ISO instant, key, value]` rows as one source, then runs one micro-batch. */
async function landAndRun(pool: Pool, p: PipelineConfig, rows: [string, string, string, number][]) {
  const text = rows.map(([id, t, k, v]) => JSON.stringify({ id, t, k, v })).join("\n") + "\n";
  await landStream(pool, p, Readable.from([text]), `source-${++sources}`);
  return runBatch(pool, p, "once");
}

/** 2024-05-01T10:00Z plus `minutes`, ISO with milliseconds. */
const at = (minutes: number) => new Date(Date.parse("2024-05-01T10:00:00Z") + minutes * 60_000).toISOString();

type Row = { group_key: string; window_start: string; window_end: string; value_sum: string };
const rowId = (r: Pick<Row, "group_key" | "window_start" | "window_end">) =>
  `${r.group_key} ${r.window_start} ${r.window_end}`;

/** A consumer mirroring the results: follows the retractions by id, then reads the results. */
class Mirror {
  private lastId = 0;
  readonly rows = new Map<string, Row>();
  constructor(
    private readonly pool: Pool,
    private readonly pipeline: string,
  ) {}
  async sync(): Promise<void> {
    const { rows: retractions } = await this.pool.query(
      "SELECT id, group_key, window_start, window_end, replaced_by_start, replaced_by_end FROM straggler.retractions WHERE pipeline = $1 AND id > $2 ORDER BY id",
      [this.pipeline, this.lastId],
    );
    for (const x of retractions) {
      this.rows.delete(rowId(x));
      // …and every row of its key inside its replacement, other than the replacement itself.
      for (const [id, r] of this.rows) {
        const inside =
          r.group_key === x.group_key &&
          Date.parse(r.window_start) >= Date.parse(x.replaced_by_start) &&
          Date.parse(r.window_end) <= Date.parse(x.replaced_by_end);
        if (inside && !(r.window_start === x.replaced_by_start && r.window_end === x.replaced_by_end))
          this.rows.delete(id);
      }
      this.lastId = x.id;
    }
    for (const r of await results(this.pool, this.pipeline)) this.rows.set(rowId(r), r);
  }
  sorted(): Row[] {
    return [...this.rows.values()].sort((a, b) => rowId(a).localeCompare(rowId(b)));
  }
}

const results = async (pool: Pool, name: string): Promise<Row[]> =>
  (
    await pool.query(
      "SELECT group_key, window_start, window_end, value_sum FROM straggler.window_results WHERE pipeline = $1 ORDER BY group_key, window_start",
      [name],
    )
  ).rows;
const retractionCount = async (pool: Pool, name: string): Promise<number> =>
  (await pool.query("SELECT count(*)::int AS n FROM straggler.session_retractions WHERE pipeline = $1", [name])).rows[0]
    .n;

describe("session retractions are bounded", () => {
  it("50 keys extended over 20 micro-batches keep exactly 50 retractions (one per session, of its last batch); consumers synced at any batch converge on the results", async () => {
    const { pool } = await getDb();
    const p = sessionPipeline("retractions-bound");
    const keys = Array.from({ length: 50 }, (_, i) => `k${String(i).padStart(2, "0")}`);
    const early = new Mirror(pool, p.name),
      middle = new Mirror(pool, p.name),
      late = new Mirror(pool, p.name);
    const counts: number[] = [];
    for (let b = 0; b < 20; b++) {
      // Every key's event 10 minutes after the last: within the gap, each extends its session.
      await landAndRun(
        pool,
        p,
        keys.map((k) => [`${k}-${b}`, at(b * 10), k, 1]),
      );
      counts.push(await retractionCount(pool, p.name));
      if (b === 0) await early.sync();
      if (b === 9) await middle.sync();
      if (b === 18) await late.sync();
    }
    // Without pruning: 50 after batch 1, 100 after batch 2, … 950 after batch 19.
    expect(counts).toEqual([0, ...Array(19).fill(50)]);
    const { rows } = await pool.query(
      "SELECT group_key, window_start, window_end, event_count, reason, batch_id, replaced_by_start, replaced_by_end FROM straggler.retractions WHERE pipeline = $1 ORDER BY id",
      [p.name],
    );
    expect(rows).toEqual(
      keys.map((k) => ({
        group_key: k,
        window_start: at(0),
        window_end: at(180 + 30),
        event_count: 19,
        reason: "extended",
        batch_id: 19,
        replaced_by_start: at(0),
        replaced_by_end: at(190 + 30),
      })),
    );
    const live = await results(pool, p.name);
    expect(live).toEqual(
      keys.map((k) => ({ group_key: k, window_start: at(0), window_end: at(220), value_sum: "20" })),
    );
    for (const m of [early, middle, late]) {
      await m.sync();
      expect(m.sorted()).toEqual(live);
    }
  });

  it("an event bridging two sessions leaves two merged retractions; the next extension of the merged session replaces them with one", async () => {
    const { pool } = await getDb();
    const p = sessionPipeline("retractions-merge");
    const consumer = new Mirror(pool, p.name);
    await landAndRun(pool, p, [
      ["a", at(0), "x", 1],
      ["b", at(50), "x", 10],
    ]);
    await consumer.sync();
    await landAndRun(pool, p, [["c", at(25), "x", 100]]); // [10:00,10:30) and [10:50,11:20) bridged by [10:25,10:55)
    const reasons = async () =>
      (
        await pool.query(
          "SELECT reason, window_start, window_end FROM straggler.retractions WHERE pipeline = $1 ORDER BY id",
          [p.name],
        )
      ).rows;
    expect(await reasons()).toEqual([
      { reason: "merged", window_start: at(0), window_end: at(30) },
      { reason: "merged", window_start: at(50), window_end: at(80) },
    ]);
    await landAndRun(pool, p, [["d", at(70), "x", 1000]]); // within the merged session [10:00,11:20): it ends at 11:40 now
    expect(await reasons()).toEqual([{ reason: "extended", window_start: at(0), window_end: at(80) }]);
    await consumer.sync();
    expect(consumer.sorted()).toEqual([
      { group_key: "x", window_start: at(0), window_end: at(100), value_sum: "1111" },
    ]);
  });

  it("the migration compacts retractions kept before: each stream retraction covered by a later one of its key is removed; corrected ones and other keys stay", async () => {
    const { pool } = await getDb();
    const insert = (key: string, ws: number, we: number, reason: string, rs: number, re: number) =>
      pool
        .query(
          `INSERT INTO straggler.session_retractions (pipeline, group_key, window_start, window_end, event_count, revision, was_final, reason, batch_id, run_id, replaced_by_start, replaced_by_end)
         VALUES ('old', $1, $2, $3, 1, 1, false, $4, CASE WHEN $4 = 'corrected' THEN NULL ELSE 1 END, CASE WHEN $4 = 'corrected' THEN 1 END, $5, $6) RETURNING id`,
          [key, at(ws), at(we), reason, at(rs), at(re)],
        )
        .then((r) => r.rows[0].id as string);
    await insert("x", 0, 30, "extended", 0, 40);
    await insert("x", 0, 40, "extended", 0, 50);
    await insert("x", 100, 130, "corrected", 100, 140);
    const lastX = await insert("x", 0, 50, "extended", 0, 60);
    const otherKey = await insert("y", 0, 30, "extended", 0, 40);
    const corrected = (await pool.query("SELECT id FROM straggler.session_retractions WHERE reason = 'corrected'"))
      .rows[0].id;
    const migration = readFileSync(path.join(REPO_ROOT, "drizzle/0028_session_retraction_chains.sql"), "utf8").split(
      "--> statement-breakpoint",
    )[1]!;
    await pool.query(migration);
    expect(
      (await pool.query("SELECT id FROM straggler.session_retractions WHERE pipeline = 'old' ORDER BY id")).rows.map(
        (r) => r.id,
      ),
    ).toEqual([corrected, lastX, otherKey]);
  });
});
