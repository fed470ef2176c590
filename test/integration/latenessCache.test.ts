/**
 * The page's lateness reports (src/ui/data.ts `LatenessCache`): a report is kept while its pipeline's stream has not
 * moved and nothing has landed in the pipeline; a landing of another pipeline keeps it, a landing of its own makes a
 * new one. The key reads the pipeline's highest seq above its checkpoint (the rows not streamed yet), whatever the
 * statistics say.
 */
import { describe, expect, it } from "vitest";
import { createPool } from "../../src/db/pool.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { LatenessCache } from "../../src/ui/data.js";
import { useTestDatabase } from "../helpers/db.js";
import { idOrders, recordsOfText } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

describe("the page's lateness reports", () => {
  it("are kept while the pipeline's stream has not moved and nothing landed in it; another pipeline's landing keeps them", async () => {
    const { url } = await getDb();
    const pool = createPool(url, 2);
    try {
      const mine = idOrders("lateness-cache-mine"),
        other = idOrders("lateness-cache-other");
      let n = 0;
      const land = (p: typeof mine) =>
        landRecords(
          pool,
          p,
          `s:${++n}`,
          recordsOfText(JSON.stringify({ id: `e${n}`, t: "2024-01-15T12:00:00Z", v: 1 })),
          { landingTimeMs: Date.parse("2024-01-15T12:30:00Z"), newSource: true },
        );
      await land(mine);
      await runBatch(pool, mine, "once");
      const cache = new LatenessCache();
      const first = await cache.get(pool, mine);
      expect(await cache.get(pool, mine)).toBe(first);
      await land(other);
      expect(await cache.get(pool, mine)).toBe(first);
      await land(mine); // above the checkpoint: a new report
      const second = await cache.get(pool, mine);
      expect(second).not.toBe(first);
      expect(await cache.get(pool, mine)).toBe(second);
      await runBatch(pool, mine, "once"); // the stream moved
      expect(await cache.get(pool, mine)).not.toBe(second);
    } finally {
      await pool.end();
    }
  });
});
