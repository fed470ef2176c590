/**
 * One landing (src/ingest/copyToBronze.ts) opens its transaction in one
 * exchange with the server, as a group commit does: BEGIN, the lock, the
 * flush setting, bronze's seq high water and the source's record. Its counts,
 * `seq` range and records are those the statements one by one gave.
 */
import { describe, expect, it } from "vitest";
import type { RawRecord } from "../../src/core/admission.js";
import { createPool } from "../../src/db/pool.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { useTestDatabase } from "../helpers/db.js";
import { recordExchanges } from "../helpers/exchanges.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

async function* records(rows: [string, string][]): AsyncGenerator<RawRecord> {
  let line = 0;
  for (const [id, t] of rows) {
    line++;
    const raw = `${id},${t},1`;
    yield { line, raw, fields: { id, t, v: "1" }, origin: "rt.csv" };
  }
}

describe("the exchanges of one landing", () => {
  it("BEGIN with the lock, the flush setting, the seq high water, the source's id and its record in one exchange; then COPY, the dedupe, the range, the record, the header, the NOTIFY, COMMIT: a duplicate counted, the header and the record written", async () => {
    const { url } = await getDb();
    const pool = createPool(url, 1);
    const exchanges = recordExchanges(pool);
    try {
      const p = pipeline({
        name: "landing-exchanges",
        source: { format: "csv" },
        fields: { eventId: "id", eventTime: "t", value: "v" },
        window: { type: "tumbling", size: "10 minutes" },
        watermark: { delay: "10 minutes" },
        admission: { maxFutureSkew: null },
      });
      const first = await landRecords(
        pool,
        p,
        "rt:1",
        records([
          ["a", "2024-01-15T12:01:00Z"],
          ["b", "2024-01-15T12:02:00Z"],
        ]),
        { landingTimeMs: Date.now(), newSource: true },
      );
      expect([first.landed, first.accepted, first.quarantined, first.lastSeq! - first.firstSeq!]).toEqual([2, 2, 0, 1]);
      exchanges.length = 0;
      const second = await landRecords(
        pool,
        p,
        "rt:2",
        records([
          ["b", "2024-01-15T12:02:00Z"],
          ["c", "2024-01-15T12:03:00Z"],
          ["d", "2024-01-15T12:04:00Z"],
        ]),
        {
          landingTimeMs: Date.now(),
          csvHeader: () => "id,t,v",
          commitWithoutFlushWait: true,
        },
      );
      // The look-up before the lock (a source not made up for this landing), then the landing's exchanges:
      // the opening, COPY, the dedupe (DUPLICATE, then AMENDED_DUPLICATE as it found one), the seq range,
      // the source record, the header, the NOTIFY with the txid, COMMIT.
      expect(exchanges).toEqual([
        "SELECT",
        "BEGIN SELECT SET SELECT WITH SELECT",
        "COPY",
        "UPDATE",
        "UPDATE",
        "SELECT",
        "INSERT",
        "INSERT",
        "SELECT",
        "COMMIT",
      ]);
      expect(second).toEqual({
        pipeline: "landing-exchanges",
        source: "rt:2",
        alreadyLanded: false,
        landed: 3,
        accepted: 2,
        quarantined: 1,
        byReason: { DUPLICATE: 1 },
        firstSeq: first.lastSeq! + 1,
        lastSeq: first.lastSeq! + 3,
      });
      const rec = await pool.query(
        "SELECT rows, accepted, quarantined, first_seq, last_seq, by_reason FROM straggler.landed_sources WHERE pipeline = $1 AND source = 'rt:2'",
        [p.name],
      );
      expect(rec.rows).toEqual([
        {
          rows: 3,
          accepted: 2,
          quarantined: 1,
          first_seq: first.lastSeq! + 1,
          last_seq: first.lastSeq! + 3,
          by_reason: { DUPLICATE: 1 },
        },
      ]);
      const header = await pool.query("SELECT source, header FROM straggler.source_headers WHERE pipeline = $1", [
        p.name,
      ]);
      expect(header.rows).toEqual([{ source: "rt:2", header: "id,t,v" }]);
      const dup = await pool.query(
        "SELECT event_id, status, reason FROM straggler.bronze_events WHERE pipeline = $1 AND source_id = (SELECT id FROM straggler.bronze_sources WHERE pipeline = $1 AND name = 'rt:2') ORDER BY seq",
        [p.name],
      );
      expect(dup.rows).toEqual([
        { event_id: "b", status: "quarantined", reason: "DUPLICATE" },
        { event_id: "c", status: "accepted", reason: null },
        { event_id: "d", status: "accepted", reason: null },
      ]);
      // Landed again: answered from its record, under the lock too (nothing written).
      exchanges.length = 0;
      const again = await landRecords(pool, p, "rt:2", records([["x", "2024-01-15T12:05:00Z"]]), {
        landingTimeMs: Date.now(),
      });
      expect([again.alreadyLanded, again.landed, again.accepted, again.byReason]).toEqual([
        true,
        3,
        2,
        { DUPLICATE: 1 },
      ]);
      expect(exchanges).toEqual(["SELECT"]);
    } finally {
      await pool.end();
    }
  });
});
