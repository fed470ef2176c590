import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { landStream } from "../../src/ingest/landFile.js";
import { landPendingFiles } from "../../src/ingest/landingFolder.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { checkpoint, ledger, windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

/** A pipeline as a new user writes it: no admission section, no landing folder, a one-field groupKey as a string. */
const plain = (name: string, admission?: Record<string, unknown>) =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventTime: "t", groupKey: "k", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    ...(admission ? { admission } : {}),
  });

const LANDED_AT = Date.parse("2024-01-15T12:30:00Z");
const lines = [
  { t: "2024-01-15T12:01:00Z", k: "a", v: 10 },
  { t: "9999-12-31T23:59:59Z", k: "a", v: 1 },
  { t: "2024-01-15T13:30:00Z", k: "a", v: 2 }, // exactly 1 hour after landing: accepted
  { t: "2024-01-15T13:30:00.001Z", k: "a", v: 3 }, // 1 ms more: quarantined
]
  .map((r) => JSON.stringify(r))
  .join("\n");

describe("safe by default: the future-skew guard", () => {
  it("quarantines an event dated year 9999 when the pipeline says nothing, so the watermark stays put", async () => {
    const { pool } = await getDb();
    const p = plain("guarded-by-default");
    const landed = await landStream(pool, p, Readable.from([lines]), "http", LANDED_AT);
    expect([landed.accepted, landed.quarantined]).toEqual([2, 2]);
    const reasons = await pool.query(
      "SELECT reason, detail FROM straggler.quarantine WHERE pipeline = $1 ORDER BY source_line",
      [p.name],
    );
    expect(reasons.rows).toEqual([
      { reason: "FUTURE_TS", detail: "event time is 251696978999000 ms after its ingestion time (max 3600000 ms)" },
      { reason: "FUTURE_TS", detail: "event time is 3600001 ms after its ingestion time (max 3600000 ms)" },
    ]);
    await runBatch(pool, p, "once");
    expect((await checkpoint(pool, p.name)).watermark).toBe("2024-01-15T13:20:00.000Z");
    expect(await windowSummary(pool, p.name)).toEqual(["a [12:00,12:10)=10 final", "a [13:30,13:40)=2 open"]);
  });

  it("also holds when the record supplies its own ingestion time: one far after the landing time is FUTURE_TS", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "guarded-ingestion-field",
      source: { format: "jsonl" },
      fields: { eventTime: "t", ingestionTime: "r", groupKey: "k", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
    });
    const input = [
      { t: "2024-01-15T12:01:00Z", r: "2024-01-15T12:02:00Z", k: "a", v: 10 },
      { t: "9999-12-31T23:00:00Z", r: "9999-12-31T23:00:00Z", k: "a", v: 2 }, // both claims in year 9999
      { t: "2024-01-15T13:30:00Z", r: "2024-01-15T13:30:00Z", k: "a", v: 4 }, // ingestion exactly 1 hour after landing: accepted
      { t: "2024-01-15T13:30:00Z", r: "2024-01-15T13:30:00.000001Z", k: "a", v: 8 }, // 1 µs more: quarantined
      { t: "2024-01-15T12:20:00Z", r: "2024-01-15T12:21:00Z", k: "a", v: 7 },
    ]
      .map((r) => JSON.stringify(r))
      .join("\n");
    const landed = await landStream(pool, p, Readable.from([input]), "http", LANDED_AT);
    expect([landed.accepted, landed.quarantined]).toEqual([3, 2]);
    const reasons = await pool.query(
      "SELECT reason, detail FROM straggler.quarantine WHERE pipeline = $1 ORDER BY source_line",
      [p.name],
    );
    expect(reasons.rows).toEqual([
      { reason: "FUTURE_TS", detail: "ingestion time is 251696975400000 ms after the landing time (max 3600000 ms)" },
      { reason: "FUTURE_TS", detail: "ingestion time is 3600000.001 ms after the landing time (max 3600000 ms)" },
    ]);
    await runBatch(pool, p, "once");
    expect((await checkpoint(pool, p.name)).watermark).toBe("2024-01-15T13:20:00.000Z");
    expect(await windowSummary(pool, p.name)).toEqual([
      "a [12:00,12:10)=10 final",
      "a [12:20,12:30)=7 final",
      "a [13:30,13:40)=4 open",
    ]);
  });

  it("lets the year-9999 event through only with an explicit maxFutureSkew: null", async () => {
    const { pool } = await getDb();
    const p = plain("unguarded", { maxFutureSkew: null });
    // 23:49:59, not 23:59:59: the last 10-minute window of 9999 would end in year 10000, outside the supported instants (PARSE_FAIL).
    const landed = await landStream(
      pool,
      p,
      Readable.from([lines.replace("9999-12-31T23:59:59Z", "9999-12-31T23:49:59Z")]),
      "http",
      LANDED_AT,
    );
    expect([landed.accepted, landed.quarantined]).toEqual([4, 0]);
    await runBatch(pool, p, "once");
    expect((await checkpoint(pool, p.name)).watermark).toBe("9999-12-31T23:39:59.000Z");
    expect(await ledger(pool, p.name)).toEqual({ landed: 4, accepted: 4, quarantined: 0 });
  });

  it("a pipeline without a landing folder has nothing to pass over and still lands posted events", async () => {
    const { pool } = await getDb();
    const p = plain("no-landing-folder");
    expect(await landPendingFiles(pool, p)).toEqual({
      landed: [],
      refused: [],
      waiting: [],
      changed: [],
      unchanged: [],
      failed: [],
    });
    const landed = await landStream(
      pool,
      p,
      Readable.from(['{"t":"2024-01-15T12:02:00Z","k":"b","v":5}']),
      "stdin",
      LANDED_AT,
    );
    expect(landed.accepted).toBe(1);
  });
});

describe("the CLI with a pipeline that has no landing folder, and a bad --batch-span", () => {
  it("exits 2 with a plain message instead of reading a folder that is not configured or a duration it cannot read", async () => {
    const { url } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-no-landing-"));
    const config = path.join(dir, "pipelines.yaml");
    writeFileSync(
      config,
      "pipelines:\n  - { name: posted, source: { format: jsonl }, fields: { eventTime: t, groupKey: k }, window: { type: tumbling, size: 1 minute }, watermark: { delay: 0 seconds } }\n",
    );
    const data = path.join(dir, "events.jsonl");
    writeFileSync(data, '{"t":"2024-01-15T12:00:00Z","k":"a"}\n');
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: config };

    const ingest = await startCli(["ingest", "-p", "posted"], env).done;
    expect([ingest.code, ingest.stderr.trim()]).toEqual([
      2,
      "straggler: pipeline posted has no source.landingDir; name the files to land",
    ]);
    const replay = await startCli(["replay", "-p", "posted", "--arrival-field", "t", "--batch-span", "1 hour"], env)
      .done;
    expect([replay.code, replay.stderr.trim()]).toEqual([
      2,
      "straggler: pipeline posted has no source.landingDir; name the files to land",
    ]);
    const span = await startCli(["replay", "-p", "posted", data, "--arrival-field", "t", "--batch-span", "10"], env)
      .done;
    expect([span.code, span.stderr.trim()]).toEqual([
      2,
      'straggler: --batch-span: a number without a unit: write "10 seconds" (or minutes, hours, ...)',
    ]);
    const landed = await startCli(["ingest", "-p", "posted", data], env).done;
    expect([landed.code, landed.stdout]).toMatchObject([0, expect.stringContaining("posted")]);
  });
});
