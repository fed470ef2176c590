/**
 * What keeps a small micro-batch cheap (issue 15): the replay reads its
 * staged records page by page without holding a snapshot open.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { copyReplayRows, createReplayRows, dropReplayRows, indexReplayRows, readReplayPage, replayLine } from "../../src/db/sql/stageReplayRows.js";
import { replay } from "../../src/replay/replay.js";
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
      await copyReplayRows(client, (async function* () {
        for (const [arrival, origin, line] of staged) yield replayLine(arrival, origin, line, `${origin}:${line}`, null, "{}", null);
      })());
      await indexReplayRows(client);
      const seen: string[] = [];
      let page = await readReplayPage(client, null, 2);
      while (page.length > 0) {
        expect(page.length).toBeLessThanOrEqual(2);
        seen.push(...page.map((r) => `${r.arrival_ms ?? "-"}.${r.arrival_sub_ms ?? "-"} ${r.raw} #${r.ord}`));
        page = await readReplayPage(client, page[page.length - 1]!, 2);
      }
      expect(seen).toEqual([
        "-.- a.csv:3 #6", "-.- b.csv:7 #2",
        "-5000.0 a.csv:1 #9",
        "1000.0 a.csv:2 #7", "1000.0 b.csv:2 #3",
        "2000.4 c.csv:1 #5",
        "2000.5 a.csv:9 #4", "2000.5 a.csv:9 #8", "2000.5 b.csv:1 #1",
      ]);
    } finally {
      await dropReplayRows(client);
      client.release();
    }
  });

  it("no session holds a snapshot between two spans of a replay (a snapshot held open keeps every old row version the stream writes)", async () => {
    const { pool } = await getDb();
    const file = path.join(dir, "spans.csv");
    const lines = ["id,t,arrived,v"];
    for (let i = 0; i < 30; i++) lines.push(`e${i},2024-01-15T${String(i % 24).padStart(2, "0")}:01:00Z,2024-01-15T${String(i % 24).padStart(2, "0")}:02:00Z,${i}`);
    writeFileSync(file, lines.join("\n") + "\n");
    const p = pipeline({
      name: "no-snapshot",
      source: { landingDir: dir, format: "csv" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "1 hour" },
      watermark: { delay: "1 hour" },
    });
    const checks: Promise<number>[] = [];
    const summary = await replay(pool, p, {
      files: [file], arrivalField: "arrived", batchSpanMs: 3_600_000,
      onBatch: () => {
        // The staging session (its last statement read replay_rows, or a cursor over them) idle inside a transaction.
        checks.push(pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND query ~ 'replay_(rows|cursor)'")
          .then(({ rows }) => rows[0].n as number));
      },
    });
    expect(summary.replayBatches).toBe(24);
    expect(summary.rowsLanded).toBe(30);
    expect(await Promise.all(checks)).toEqual(Array(24).fill(0));
  });
});
