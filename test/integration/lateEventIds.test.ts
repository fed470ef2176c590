/**
 * Migration 0049 (drizzle/0049_late_event_ids.sql): the late pairs recorded before it take their event's id from
 * bronze; a pair whose bronze row is gone keeps none. After it, the stream writes each late pair with its id
 * (test/integration/batchPairs.test.ts) and the correction's audit names them from there.
 */
import { describe, expect, it } from "vitest";
import { runMigrations, runMigrationsBefore } from "../../src/db/migrate.js";
import { withFreshDatabase } from "../helpers/db.js";

describe("migration 0049: late pairs with their event ids", () => {
  it("fills each recorded late pair's id from bronze, and leaves none where bronze has no row for its seq", async () => {
    await withFreshDatabase(async (pool) => {
      await runMigrationsBefore(pool, 49);
      // Two bronze rows as a landing leaves them (written by hand: this build's landing needs the migrations after 0049).
      const p = { name: "late-ids" };
      const seqs = (
        await pool.query(
          `INSERT INTO straggler.bronze_events (pipeline, source_id, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status)
           SELECT $1, straggler.bronze_source_id($1, 'a.jsonl'), v.line, v.id, '{}', v.t, v.t, '', 1, 'accepted'
             FROM (VALUES (1, 'x1', '2026-10-01T12:00:00Z'::timestamptz), (2, 'x2', '2026-10-01T12:01:00Z'::timestamptz)) v(line, id, t)
           ORDER BY v.line RETURNING seq::int`,
          [p.name],
        )
      ).rows.map((r) => r.seq as number);
      const landed = { firstSeq: seqs[0], lastSeq: seqs[1] };
      // Two pairs recorded as the stream before 0049 wrote them (no id), and one whose bronze row is gone.
      await pool.query(
        `INSERT INTO straggler.late_events (pipeline, seq, group_key, window_start, window_end, batch_id)
         SELECT $1, s, '', '2026-10-01T12:00:00Z', '2026-10-01T12:10:00Z', 3 FROM unnest($2::bigint[]) s`,
        [p.name, [landed.firstSeq!, landed.lastSeq!, landed.lastSeq! + 1000]],
      );
      await runMigrations(pool);
      const { rows } = await pool.query(
        "SELECT seq::int - $2::int AS at, event_id FROM straggler.late_events WHERE pipeline = $1 ORDER BY seq",
        [p.name, landed.firstSeq!],
      );
      expect(rows).toEqual([
        { at: 0, event_id: "x1" },
        { at: 1, event_id: "x2" },
        { at: 1001, event_id: null },
      ]);
    });
  });
});
