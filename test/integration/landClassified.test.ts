/**
 * A landing classified in memory before it takes the append lock
 * (`classifyInMemory`, then `landRecords`: what a replay does per span) probes
 * its accepted event ids before its COPY and skips the dedupe when none can be
 * a duplicate; when one can (in bronze before, or twice in the landing) the
 * dedupe runs as in every landing, with the same outcome.
 */
import { describe, expect, it } from "vitest";
import type { RawRecord } from "../../src/core/admission.js";
import { createPool } from "../../src/db/pool.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { classifyInMemory } from "../../src/ingest/classifyLines.js";
import { LandedIds } from "../../src/ingest/landedIds.js";
import { useTestDatabase } from "../helpers/db.js";
import { recordExchanges } from "../helpers/exchanges.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

async function* records(ids: string[]): AsyncGenerator<RawRecord> {
  let line = 0;
  for (const given of ids) {
    line++;
    // An id's event time is its own: a repeat is a copy (DUPLICATE), not an amendment. `!x`: the id x with a time
    // that does not parse (PARSE_FAIL).
    const id = given.replace(/^!/, "");
    const t = given.startsWith("!")
      ? "not-a-time"
      : `2024-01-15T12:${String(id.charCodeAt(0) - 90).padStart(2, "0")}:00Z`;
    yield { line, raw: `${id},${t},1`, fields: { id, t, v: "1" }, origin: "mem.csv" };
  }
}

/** A CSV pipeline reading `id`, `t` and `v`: 10-minute tumbling windows, a 10-minute delay, no future skew check. */
const csvPipeline = (name: string) =>
  pipeline({
    name,
    source: { format: "csv" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { maxFutureSkew: null },
  });

describe("a landing classified in memory", () => {
  it("probes its ids before the COPY: no dedupe when every id is new, the dedupe when one is in bronze or twice in the landing; the rest of a landing over the limit is read during its COPY", async () => {
    const { url } = await getDb();
    const pool = createPool(url, 1);
    const exchanges = recordExchanges(pool);
    try {
      const p = csvPipeline("land-classified");
      const opts = { landingTimeMs: Date.parse("2024-01-15T13:00:00Z"), newSource: true };
      const land = async (source: string, ids: string[], max = 100) =>
        landRecords(pool, p, source, await classifyInMemory(p, source, records(ids), opts, max), opts);
      const reasons = async (source: string) =>
        (
          await pool.query(
            "SELECT event_id, status, reason FROM straggler.bronze_events WHERE pipeline = $1 AND source_id = (SELECT id FROM straggler.bronze_sources WHERE pipeline = $1 AND name = $2) ORDER BY seq",
            [p.name, source],
          )
        ).rows.map((r) => `${r.event_id}:${r.reason ?? r.status}`);

      // Every id new: the probe (the last SELECT of the opening exchange, under the lock), no UPDATE.
      const first = await land("m:1", ["a", "b"]);
      expect([first.landed, first.accepted, first.byReason]).toEqual([2, 2, {}]);
      // After the COPY, one exchange (the range, the source's record and the NOTIFY: src/db/sql/ingest/recordLanding.ts), then COMMIT.
      expect(exchanges).toEqual(["BEGIN SELECT SELECT WITH SELECT", "COPY", "WITH", "COMMIT"]);

      // "b" is in bronze: the probe finds it, the dedupe runs (DUPLICATE, then the AMENDED check).
      exchanges.length = 0;
      const second = await land("m:2", ["b", "c"]);
      expect([second.landed, second.accepted, second.byReason]).toEqual([2, 1, { DUPLICATE: 1 }]);
      expect(exchanges).toEqual([
        "BEGIN SELECT SELECT WITH SELECT",
        "COPY",
        "UPDATE",
        "UPDATE",
        "SELECT",
        "INSERT",
        "SELECT",
        "COMMIT",
      ]);
      expect(await reasons("m:2")).toEqual(["b:DUPLICATE", "c:accepted"]);

      // "d" twice in the landing: no probe (the dedupe must run), the second "d" is a DUPLICATE.
      exchanges.length = 0;
      const third = await land("m:3", ["d", "e", "d"]);
      expect([third.landed, third.accepted, third.byReason]).toEqual([3, 2, { DUPLICATE: 1 }]);
      expect(exchanges).toEqual([
        "BEGIN SELECT SELECT WITH",
        "COPY",
        "UPDATE",
        "UPDATE",
        "SELECT",
        "INSERT",
        "SELECT",
        "COMMIT",
      ]);
      expect(await reasons("m:3")).toEqual(["d:accepted", "e:accepted", "d:DUPLICATE"]);

      // Over the in-memory limit (2 of 3 records): the rest is classified during the COPY, and the dedupe runs.
      exchanges.length = 0;
      const fourth = await land("m:4", ["f", "g", "a"], 2);
      expect([fourth.landed, fourth.accepted, fourth.byReason]).toEqual([3, 2, { DUPLICATE: 1 }]);
      expect(exchanges).toEqual([
        "BEGIN SELECT SELECT WITH",
        "COPY",
        "UPDATE",
        "UPDATE",
        "SELECT",
        "INSERT",
        "SELECT",
        "COMMIT",
      ]);
      expect(await reasons("m:4")).toEqual(["f:accepted", "g:accepted", "a:DUPLICATE"]);

      // The same records landed as they are read give the same outcome.
      const streamed = await landRecords(pool, { ...p, name: "land-streamed" }, "m:1", records(["a", "b"]), opts);
      expect([streamed.landed, streamed.accepted, streamed.byReason]).toEqual([2, 2, {}]);
    } finally {
      await pool.end();
    }
  });

  it("skips the probe where the replay's own ids tell every id is new; probes or dedupes again where they cannot", async () => {
    const { url } = await getDb();
    const pool = createPool(url, 1);
    const exchanges = recordExchanges(pool);
    try {
      const p = csvPipeline("land-known-ids");
      const opts = { landingTimeMs: Date.parse("2024-01-15T13:00:00Z"), newSource: true };
      // What a replay does per span: land with its LandedIds (the landing tells it the outcome).
      const land = async (source: string, ids: string[], landedIds?: LandedIds, into = p) =>
        landRecords(pool, into, source, await classifyInMemory(into, source, records(ids), opts, 100), {
          ...opts,
          landedIds,
        });
      const outcome = async (of: typeof p) =>
        (
          await pool.query(
            "SELECT event_id, status, reason FROM straggler.bronze_events WHERE pipeline = $1 ORDER BY seq",
            [of.name],
          )
        ).rows.map((r) => `${r.event_id}:${r.reason ?? r.status}`);
      const noProbe = ["BEGIN SELECT SELECT WITH", "COPY", "WITH", "COMMIT"];
      const dedupe = ["BEGIN SELECT SELECT WITH", "COPY", "UPDATE", "UPDATE", "SELECT", "INSERT", "SELECT", "COMMIT"];

      const known = new LandedIds(100);
      // The pipeline is empty and the ids new: no probe in the opening exchange, no dedupe.
      expect((await land("k:1", ["a", "b"], known)).accepted).toBe(2);
      expect(exchanges).toEqual(noProbe);
      exchanges.length = 0;
      expect((await land("k:2", ["c"], known)).accepted).toBe(1);
      expect(exchanges).toEqual(noProbe);

      // "b" is one of the replay's own: the filter says "maybe", the probe finds it, the dedupe quarantines it.
      exchanges.length = 0;
      const again = await land("k:3", ["b", "d"], known);
      expect([again.accepted, again.byReason]).toEqual([1, { DUPLICATE: 1 }]);
      expect(exchanges).toEqual(dedupe.map((e, i) => (i === 0 ? `${e} SELECT` : e)));
      // The dedupe's DUPLICATE was an accepted id, in the filter already: the filter holds, a new id is not probed.
      exchanges.length = 0;
      await land("k:4", ["e"], known);
      expect(exchanges).toEqual(noProbe);
      // A record quarantined by its classification: its id goes in the filter too (a cutover to another policy could
      // accept that row), so a later span that accepts the id is probed; the index does not hold it: no dedupe.
      exchanges.length = 0;
      expect((await land("k:5", ["!g"], known)).byReason).toEqual({ PARSE_FAIL: 1 });
      expect(exchanges).toEqual(noProbe);
      exchanges.length = 0;
      const g = await land("k:6", ["g"], known);
      expect([g.accepted, g.byReason]).toEqual([1, {}]);
      expect(exchanges).toEqual(["BEGIN SELECT SELECT WITH SELECT", "COPY", "WITH", "COMMIT"]);
      // And the filter still holds after it.
      exchanges.length = 0;
      await land("k:7", ["i"], known);
      expect(exchanges).toEqual(noProbe);

      // A pipeline with rows before the replay: its first landing finds them, dedupes though its filter said "new".
      exchanges.length = 0;
      const before = await land("n:1", ["a"], new LandedIds(100));
      expect([before.accepted, before.byReason]).toEqual([0, { DUPLICATE: 1 }]);
      expect(exchanges).toEqual(dedupe);
      expect(await outcome(p)).toEqual([
        "a:accepted",
        "b:accepted",
        "c:accepted",
        "b:DUPLICATE",
        "d:accepted",
        "e:accepted",
        "g:PARSE_FAIL",
        "g:accepted",
        "i:accepted",
        "a:DUPLICATE",
      ]);

      // Another writer lands "f" between two of a replay's spans: the replay's next landing finds the pipeline moved,
      // dedupes though its filter said "new" ("f" is a DUPLICATE), and probes from then on.
      const q = csvPipeline("land-known-ids-other");
      const other = new LandedIds(100);
      exchanges.length = 0;
      await land("o:1", ["a"], other, q);
      expect(exchanges).toEqual(noProbe);
      await land("x:1", ["f"], undefined, q);
      exchanges.length = 0;
      const moved = await land("o:2", ["f"], other, q);
      expect([moved.accepted, moved.byReason]).toEqual([0, { DUPLICATE: 1 }]);
      expect(exchanges).toEqual(dedupe);
      exchanges.length = 0;
      await land("o:3", ["h"], other, q);
      expect(exchanges[0]).toBe("BEGIN SELECT SELECT WITH SELECT");
      expect(await outcome(q)).toEqual(["a:accepted", "f:accepted", "f:DUPLICATE", "h:accepted"]);
    } finally {
      await pool.end();
    }
  });

  it("records the source, its CSV header and layout, the seq range and the NOTIFY in one exchange after the COPY; the raw text reads back", async () => {
    const { url } = await getDb();
    const pool = createPool(url, 1);
    const exchanges = recordExchanges(pool);
    try {
      const p = csvPipeline("land-one-exchange");
      // A header with a "$1" in it: the parameters are written into the SQL text, never the values' own text.
      const opts = {
        landingTimeMs: Date.parse("2024-01-15T13:00:00Z"),
        newSource: true,
        csvHeader: () => "id,t,v",
        elideRaw: () => true,
      };
      const r = await landRecords(
        pool,
        p,
        "h:$1",
        await classifyInMemory(p, "h:$1", records(["a", "b", "c"]), opts, 100),
        opts,
      );
      expect([r.landed, r.accepted, r.lastSeq! - r.firstSeq!]).toEqual([3, 3, 2]);
      expect(exchanges).toEqual(["BEGIN SELECT SELECT WITH SELECT", "COPY", "INSERT WITH", "COMMIT"]);
      const recorded = await pool.query(
        "SELECT source, rows, accepted, first_seq, last_seq FROM straggler.landed_sources WHERE pipeline = $1",
        [p.name],
      );
      expect(recorded.rows).toEqual([
        { source: "h:$1", rows: 3, accepted: 3, first_seq: r.firstSeq, last_seq: r.lastSeq },
      ]);
      const header = await pool.query("SELECT header, raw_layout FROM straggler.source_headers WHERE pipeline = $1", [
        p.name,
      ]);
      // Each row was written without its raw text (its own columns joined by commas), read back by this layout.
      expect(header.rows.map((h) => [h.header, h.raw_layout === null])).toEqual([["id,t,v", false]]);
      expect(
        (
          await pool.query(
            "SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 AND raw IS NULL",
            [p.name],
          )
        ).rows[0].n,
      ).toBe(3);
      const raw = await pool.query("SELECT raw FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq", [p.name]);
      expect(raw.rows.map((x) => x.raw)).toEqual([
        "a,2024-01-15T12:07:00Z,1",
        "b,2024-01-15T12:08:00Z,1",
        "c,2024-01-15T12:09:00Z,1",
      ]);
    } finally {
      await pool.end();
    }
  });
});
