/**
 * A landing's opening exchange (under the append lock: where its rows begin, the sources' ids, the probe of its
 * event ids) reads nothing that grows with its pipeline, whatever bronze's statistics say. The kind this guards: a
 * statement over the pipeline's rows whose plan depends on the pipeline being in the statistics. A pipeline new since
 * bronze's last ANALYZE is estimated at about one row, and the landings' old `max(seq)` of the pipeline was planned
 * then as an aggregate over every row of the pipeline in the (pipeline, seq) index: 25 ms a landing at 90,000 rows,
 * growing with each (BENCHMARKS.md "Issue 30, round sixteen").
 *
 * Each landing's opening exchange is caught as sent and run again in a transaction of its own, rolled back; the
 * transaction's own index counters (`pg_stat_get_xact_tuples_returned`) tell how many index entries it read.
 */
import { describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { classifyInMemory } from "../../src/ingest/classifyLines.js";
import { landInGroup } from "../../src/ingest/groupCommit.js";
import { LandedIds } from "../../src/ingest/landedIds.js";
import { useTestDatabase } from "../helpers/db.js";
import { onQueryText } from "../helpers/exchanges.js";
import { idOrders, recordsOfText } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

const jsonl = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ id: `${prefix}-${i}`, t: "2024-01-15T12:00:00Z", v: i })).join(
    "\n",
  );

/** The opening exchanges (`BEGIN; SELECT pg_try_advisory_xact_lock…`) the pool's clients send from now on. */
function catchOpenings(pool: Pool): string[] {
  const caught: string[] = [];
  onQueryText(pool, (text) => {
    if (/^BEGIN; SELECT pg_try_advisory_xact_lock/.test(text)) caught.push(text);
  });
  return caught;
}

/** Index entries of bronze's (pipeline, seq) index (every partition) that `opening` reads, run again and rolled back. */
async function pipelineSeqEntriesRead(url: string, opening: string): Promise<number> {
  const pool = createPool(url, 1);
  try {
    const client = await pool.connect();
    try {
      await client.query(opening); // it begins the transaction itself
      const { rows } = await client.query(
        `SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(c.oid)), 0)::int AS n
           FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
          WHERE s.nspname = 'straggler' AND c.relkind IN ('i', 'I') AND c.relname LIKE 'bronze_events%pipeline_seq%'`,
      );
      return rows[0].n as number;
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  } finally {
    await pool.end();
  }
}

describe("a landing's opening exchange", () => {
  it("reads of its pipeline's (pipeline, seq) index at most what its own landing adds, for a pipeline new since bronze's last ANALYZE: one landing, a replay's spans, a group", async () => {
    const { url } = await getDb();
    const pool = createPool(url, 2);
    try {
      const old = idOrders("opening-known"),
        fresh = idOrders("opening-new");
      const opts = { landingTimeMs: Date.parse("2024-01-15T13:00:00Z"), newSource: true };
      await landRecords(pool, old, "k:1", recordsOfText(jsonl("k", 500)), opts);
      await pool.query("ANALYZE straggler.bronze_events");
      // 3,000 rows of a pipeline the statistics have not seen (fewer than a micro-batch: no ANALYZE after them).
      for (let i = 0; i < 3; i++) await landRecords(pool, fresh, `n:${i}`, recordsOfText(jsonl(`n${i}`, 1000)), opts);
      const [{ n }] = (
        await pool.query("SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1", [fresh.name])
      ).rows;
      expect(n).toBe(3000);

      const openings = catchOpenings(pool);
      /** The landing's result, and the index entries its opening exchange reads when run again right after it. */
      const landAndRead = async <T>(landing: () => Promise<T>): Promise<[T, number]> => {
        const result = await landing();
        return [result, await pipelineSeqEntriesRead(url, openings[openings.length - 1]!)];
      };
      const [one, oneRead] = await landAndRead(() =>
        landRecords(pool, fresh, "n:one", recordsOfText(jsonl("one", 10)), opts),
      );
      // A replay's spans: the first asks whether the pipeline has a row, the next its rows above the first's.
      const replay = new LandedIds(100);
      const spanOf = async (name: string) =>
        landRecords(pool, fresh, name, await classifyInMemory(fresh, name, recordsOfText(jsonl(name, 10)), opts, 100), {
          ...opts,
          landedIds: replay,
        });
      const [span, spanRead] = await landAndRead(() => spanOf("span1"));
      const [next, nextRead] = await landAndRead(() => spanOf("span2"));
      const [group, groupRead] = await landAndRead(() =>
        landInGroup(pool, fresh, "http:g1", recordsOfText(jsonl("g", 10)), opts),
      );
      expect([one.accepted, span.accepted, next.accepted, group.accepted, openings.length]).toEqual([
        10, 10, 10, 10, 4,
      ]);
      expect(replay.floor()).toBe(next.lastSeq);
      // Each landing's rows are exactly its own: its range begins above every row before it.
      expect([one.lastSeq! - one.firstSeq!, span.firstSeq! > one.lastSeq!, group.firstSeq! > next.lastSeq!]).toEqual([
        9,
        true,
        true,
      ]);
      // Run again after it, each opening finds at most the landing's own rows where it looked: the first span's EXISTS
      // stops at one entry, the next span's range above the first's last seq holds its own 10 rows; the others read
      // none (the pipeline's max(seq) read 3,010-3,040 here, the plan depending on the statistics).
      expect([oneRead, spanRead <= 1, nextRead <= 10, groupRead]).toEqual([0, true, true, 0]);
    } finally {
      await pool.end();
    }
  });
});
