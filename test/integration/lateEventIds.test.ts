/**
 * Migration 0049 (drizzle/0049_late_event_ids.sql): the late pairs recorded before it take their event's id from
 * bronze; a pair whose bronze row is gone keeps none. After it, the stream writes each late pair with its id
 * (test/integration/batchPairs.test.ts) and the correction's audit names them from there.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runMigrations, runMigrationsBefore } from "../../src/db/migrate.js";
import { landFile } from "../../src/ingest/landFile.js";
import { withFreshDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const dir = mkdtempSync(path.join(tmpdir(), "straggler-late-event-ids-"));

describe("migration 0049: late pairs with their event ids", () => {
  it("fills each recorded late pair's id from bronze, and leaves none where bronze has no row for its seq", async () => {
    await withFreshDatabase(async (pool) => {
      await runMigrationsBefore(pool, 49);
      const p = pipeline({
        name: "late-ids",
        source: { landingDir: dir, format: "jsonl" },
        fields: { eventId: "id", eventTime: "t", value: "v" },
        window: { type: "tumbling", size: "10 minutes" },
        watermark: { delay: "0 minutes" },
      });
      const file = path.join(dir, "a.jsonl");
      writeFileSync(
        file,
        ["x1", "x2"].map((id, i) => JSON.stringify({ id, t: `2026-10-01T12:0${i}:00Z`, v: 1 })).join("\n") + "\n",
      );
      const landed = await landFile(pool, p, file, "a.jsonl");
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
