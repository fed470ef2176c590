/**
 * A replay waits for the WAL flush once, at its end, not once a span (src/replay/spans.ts): its landings and
 * micro-batches commit without waiting for theirs (`SET LOCAL synchronous_commit = off`), then one transaction
 * of its own commits waiting, which reaches every earlier commit (the WAL is one sequence). A pipeline with a
 * change feed keeps a flush a batch: its change ids come from a sequence, which a server crash could hand
 * out again after a consumer applied them.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LockNamespace } from "../../src/db/locks.js";
import { replay } from "../../src/replay/replay.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

const HEADER = "id,event_time,arrived,k,amount";
/** Three spans of an hour. */
const ROWS = [
  "a,2024-01-15T12:01:00Z,2024-01-15T12:01:30Z,x,10.5",
  "b,2024-01-15T12:02:00Z,2024-01-15T12:02:30Z,y,-20",
  "c,2024-01-15T13:05:00Z,2024-01-15T13:05:00Z,x,30.25",
  "d,2024-01-15T14:30:00Z,2024-01-15T14:31:00Z,y,7.50",
];

function config(name: string, feed: boolean) {
  return pipeline({
    name,
    source: { format: "csv" },
    fields: { eventId: "id", eventTime: "event_time", groupKey: ["k"], value: "amount" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { maxFutureSkew: null },
    feed: { enabled: feed },
  });
}

/** Every statement text the process sends while `fn` runs, in order. */
async function statementsOf(fn: () => Promise<unknown>): Promise<string[]> {
  const texts: string[] = [];
  const original = pg.Client.prototype.query;
  const spy = vi.spyOn(pg.Client.prototype, "query").mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const q = args[0];
    texts.push(typeof q === "string" ? q : ((q as { text?: string }).text ?? ""));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original);
  try {
    await fn();
  } finally {
    spy.mockRestore();
  }
  return texts;
}

afterEach(() => vi.restoreAllMocks());

describe("a replay's WAL flush", () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "straggler-flush-")), "events.csv");
  writeFileSync(file, [HEADER, ...ROWS].join("\n") + "\n");
  const opts = { files: [file], arrivalField: "arrived", batchSpanMs: 3_600_000 };
  const batchOpening = (name: string) =>
    `BEGIN; SELECT pg_advisory_xact_lock(${LockNamespace.results}, hashtext('${name}'))`;
  const FLUSH = "BEGIN; SET LOCAL synchronous_commit = on; SELECT pg_current_xact_id(); COMMIT";

  it("without a change feed: every landing and micro-batch commits without waiting, and the replay waits once, after the last", async () => {
    const { pool } = await getDb();
    const texts = await statementsOf(() => replay(pool, config("flush-once", false), opts));
    const batches = texts.filter((t) => t.startsWith(batchOpening("flush-once")));
    expect(batches.length).toBe(3);
    expect(batches.filter((t) => t.endsWith("; SET LOCAL synchronous_commit = off")).length).toBe(3);
    const landings = texts.filter(
      (t) => t.includes("pg_try_advisory_xact_lock(") && t.includes("hashtext('flush-once')"),
    );
    expect([landings.length, landings.filter((t) => t.includes("SET LOCAL synchronous_commit = off")).length]).toEqual([
      3, 3,
    ]);
    expect(texts.filter((t) => t === FLUSH).length).toBe(1);
    // The flush comes after the last batch's COMMIT.
    const lastBatch = texts.lastIndexOf(batches[2]!);
    expect(texts.indexOf(FLUSH)).toBeGreaterThan(texts.indexOf("COMMIT", lastBatch));
    const { rows } = await pool.query(
      "SELECT group_key, window_start, event_count::int, value_sum::text FROM straggler.window_results WHERE pipeline = $1 ORDER BY window_start, group_key",
      ["flush-once"],
    );
    expect(rows.map((r) => [r.group_key, String(r.window_start), r.event_count, r.value_sum])).toEqual([
      ["x", "2024-01-15T12:00:00.000Z", 1, "10.5"],
      ["y", "2024-01-15T12:00:00.000Z", 1, "-20"],
      ["x", "2024-01-15T13:00:00.000Z", 1, "30.25"],
      ["y", "2024-01-15T14:30:00.000Z", 1, "7.50"],
    ]);
  });

  it("with a change feed: every micro-batch waits for its flush", async () => {
    const { pool } = await getDb();
    const texts = await statementsOf(() => replay(pool, config("flush-feed", true), opts));
    const batches = texts.filter((t) => t.startsWith(batchOpening("flush-feed")));
    expect(batches.length).toBe(3);
    expect(batches.filter((t) => t.includes("synchronous_commit")).length).toBe(0);
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM straggler.window_changes WHERE pipeline = $1", [
      "flush-feed",
    ]);
    expect(rows[0].n).toBe(4);
  });
});
