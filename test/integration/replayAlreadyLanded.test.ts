/**
 * Replaying files that were already landed (by the landing folder or an
 * earlier replay): every row is quarantined DUPLICATE, and the replay summary
 * says so plainly, with the way to replay from scratch. Exit codes unchanged.
 */
import { describe, expect, it } from "vitest";
import { landFile } from "../../src/ingest/landFile.js";
import { replay } from "../../src/replay/replay.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { replayedOrders } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

const ROWS =
  [
    "id,event_time,arrived,amount",
    "a,2024-01-15T12:01:00Z,2024-01-15T12:01:30Z,10",
    "b,2024-01-15T12:02:00Z,2024-01-15T12:02:30Z,20",
    "c,2024-01-15T12:03:00Z,2024-01-15T12:03:30Z,30",
  ].join("\n") + "\n";

const setup = (name: string) => replayedOrders(name, ROWS, "straggler-relanded-");

describe("replay of data landed before", () => {
  it("a fresh replay says nothing; a replay of files the landing folder landed says N of M rows were already in bronze, with `drop --yes`", async () => {
    const { pool } = await getDb();
    const fresh = setup("replay-fresh");
    const first = await replay(pool, fresh.p, { files: [fresh.file], arrivalField: "arrived", batchSpanMs: 3_600_000 });
    expect([first.rowsLanded, first.duplicateRows, first.alreadyLanded]).toEqual([3, 0, null]);

    const { p, file } = setup("replay-again");
    await landFile(pool, p, file, "orders.csv");
    const again = await replay(pool, p, { files: [file], arrivalField: "arrived", batchSpanMs: 3_600_000 });
    expect([again.rowsLanded, again.duplicateRows, again.alreadyLanded]).toEqual([
      3,
      3,
      "3 of 3 rows were already in bronze (DUPLICATE): this data was landed before; to replay from scratch, `straggler drop -p replay-again --yes` first",
    ]);
  });

  it("CLI: the text summary ends with the plain sentence, --json carries it as alreadyLanded; exit 0 both", async () => {
    const { url } = await getDb();
    const { config } = setup("replay-cli");
    const cli = (...args: string[]) => startCli(["-c", config, ...args], { DATABASE_URL: url }).done;
    expect((await cli("ingest", "-p", "replay-cli")).code).toBe(0);
    const asJson = await cli("replay", "-p", "replay-cli", "--json");
    expect(asJson.code).toBe(0);
    const summary = JSON.parse(asJson.stdout);
    expect([summary.rowsLanded, summary.duplicateRows, summary.alreadyLanded]).toEqual([
      3,
      3,
      "3 of 3 rows were already in bronze (DUPLICATE): this data was landed before; to replay from scratch, `straggler drop -p replay-cli --yes` first",
    ]);
    // Other spans (1 minute: three micro-batches) are new sources, so the rows land again, each a DUPLICATE.
    const text = await cli("replay", "-p", "replay-cli", "--batch-span", "1 minute");
    expect(text.code).toBe(0);
    expect(text.stdout.trimEnd().split("\n").at(-1)).toBe(
      "3 of 3 rows were already in bronze (DUPLICATE): this data was landed before; to replay from scratch, `straggler drop -p replay-cli --yes` first",
    );
  }, 120_000);
});
