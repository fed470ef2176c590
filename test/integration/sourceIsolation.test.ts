/**
 * Per-source isolation outside the landing folder, and the line limit:
 * huge lines (issue 11.2) in a file and on stdin, CSV dialects with exact
 * values (issue 10.8), `ingest` of named files and a missing folder or file
 * (issue 10.9), `replay` with one refused file, and the stream loop going on
 * when a landing pass fails.
 */
import { mkdirSync, mkdtempSync, openSync, writeSync, closeSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { landPendingFiles } from "../../src/ingest/landingFolder.js";
import { MAX_RECORD_BYTES } from "../../src/ingest/readers.js";
import { replay } from "../../src/replay/replay.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { runUntilCaughtUp, StreamLoop } from "../../src/stream/streamLoop.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();
const ROOT = mkdtempSync(path.join(os.tmpdir(), "straggler-isolation-"));

function orders(name: string, format: "csv" | "jsonl" = "csv", source: Record<string, unknown> = {}) {
  const landingDir = path.join(ROOT, name);
  mkdirSync(landingDir, { recursive: true });
  return pipeline({
    name,
    source: { landingDir, format, settle: "0 seconds", ...source },
    fields: { eventTime: "event_time", value: "amount" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    replay: { arrivalField: "event_time", batchSpan: "1 hour" },
  });
}

describe("a line over the record limit (issue 11.2)", () => {
  it("a 64 MiB line in a landing-folder file is MALFORMED, its raw cut at 1 MiB, and the next line lands", async () => {
    const { pool } = await getDb();
    const p = orders("huge-file", "jsonl");
    const file = path.join(p.source.landingDir!, "huge.jsonl");
    const fd = openSync(file, "w");
    writeSync(fd, '{"event_time":"2024-01-15T12:01:00Z","amount":1,"pad":"');
    const block = Buffer.alloc(1024 * 1024, 0x78);
    for (let i = 0; i < 64; i++) writeSync(fd, block);
    writeSync(fd, '"}\n{"event_time":"2024-01-15T12:02:00Z","amount":20}\n');
    closeSync(fd);
    const pass = await landPendingFiles(pool, p);
    expect(pass.landed.map((r) => [r.landed, r.accepted, r.byReason])).toEqual([[2, 1, { MALFORMED: 1 }]]);
    const { rows } = await pool.query(
      "SELECT source_line, reason, detail, length(raw) AS raw_length FROM straggler.quarantine WHERE pipeline = $1",
      [p.name],
    );
    expect(rows).toEqual([
      {
        source_line: 1,
        reason: "MALFORMED",
        detail: `longer than ${MAX_RECORD_BYTES} bytes`,
        raw_length: MAX_RECORD_BYTES,
      },
    ]);
    await runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=20 open"]);
  });

  it("on stdin too: a 16 MiB line is MALFORMED and the line after it lands", async () => {
    const { pool } = await getDb();
    const p = orders("huge-stdin", "jsonl");
    async function* input() {
      yield '{"event_time":"2024-01-15T12:01:00Z","amount":1,"pad":"';
      for (let i = 0; i < 16; i++) yield Buffer.alloc(1024 * 1024, 0x79);
      yield '"}\n{"event_time":"2024-01-15T12:02:00Z","amount":20}\n';
    }
    const r = await landStream(pool, p, Readable.from(input()), "stdin");
    expect([r.landed, r.accepted, r.byReason]).toEqual([2, 1, { MALFORMED: 1 }]);
  });
});

describe("CSV dialects (issue 10.8)", () => {
  it("semicolons, a BOM, CRLF, a quoted note spanning lines and a stray quote in an unused column: both events count, 30", async () => {
    const { pool } = await getDb();
    const p = orders("dialect", "csv", { csv: { delimiter: ";", multiline: true, relaxQuotes: true } });
    const file = path.join(p.source.landingDir!, "export.csv");
    writeFileSync(
      file,
      '\uFEFFevent_time;amount;note\r\n2024-01-15T12:01:00Z;10;"two\r\nlines; one note"\r\n2024-01-15T12:02:00Z;20;27" screen\r\n',
    );
    const r = await landFile(pool, p, file, "export.csv");
    expect([r.landed, r.accepted]).toEqual([2, 2]);
    const raws = await pool.query("SELECT source_line, raw FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq", [
      p.name,
    ]);
    expect(raws.rows).toEqual([
      { source_line: 2, raw: '2024-01-15T12:01:00Z;10;"two\r\nlines; one note"' }, // the record's full text, its CRLF kept
      { source_line: 4, raw: '2024-01-15T12:02:00Z;20;27" screen' },
    ]);
    await runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=30 open"]);
  });
});

describe("replay: one refused file never blocks the others", () => {
  it("a file whose header misses the event-time column is left out and reported; the other replays", async () => {
    const { pool } = await getDb();
    const p = orders("replay-iso");
    const good = path.join(p.source.landingDir!, "good.csv");
    const bad = path.join(p.source.landingDir!, "bad.csv");
    writeFileSync(good, "event_time,amount\n2024-01-15T12:01:00Z,10\n2024-01-15T12:02:00Z,20\n");
    writeFileSync(bad, "time,amount\n2024-01-15T12:03:00Z,30\n");
    const summary = await replay(pool, p, { files: [bad, good], arrivalField: "event_time", batchSpanMs: 3_600_000 });
    expect([summary.rowsStaged, summary.refused]).toEqual([
      2,
      [
        {
          file: bad,
          reason:
            'CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime); it names: "time", "amount"',
        },
      ],
    ]);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=30 open"]);
    const marked = await pool.query(
      "SELECT source FROM straggler.landed_sources WHERE pipeline = $1 AND source NOT LIKE 'replay:%'",
      [p.name],
    );
    expect(marked.rows).toEqual([{ source: "good.csv" }]);
  });
});

describe("the stream loop", () => {
  it("runs micro-batches even when every landing pass fails", async () => {
    const p = orders("loop", "jsonl", {});
    let landings = 0,
      batches = 0;
    let stop: () => void = () => undefined;
    const twoBatches = new Promise<void>((r) => (stop = r));
    const loop = new StreamLoop(
      { ...p, trigger: { ...p.trigger, interval: 1 } },
      {
        landPending: async () => {
          landings++;
          throw new Error("database unreachable");
        },
        runBatch: async () => {
          if (++batches >= 2) stop();
          return null;
        },
        log: pino({ level: "silent" }),
      },
    );
    loop.start();
    await twoBatches;
    await loop.stop();
    expect(landings).toBeGreaterThanOrEqual(2);
    expect(batches).toBeGreaterThanOrEqual(2);
  });
});

describe("straggler ingest (issue 10.9)", () => {
  const config = path.join(ROOT, "pipelines.yaml");
  const dataDir = path.join(ROOT, "cli");
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(
    config,
    `pipelines:
  - name: cli-orders
    source: { landingDir: ${JSON.stringify(path.join(ROOT, "no-such-folder"))}, format: csv }
    fields: { eventTime: event_time, value: amount }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
`,
  );
  const cli = async (...args: string[]) => {
    const { url } = await getDb();
    return startCli(["-c", config, ...args], { DATABASE_URL: url }).done;
  };

  it("with no files and a landing folder that does not exist: exit 2 and a plain message", async () => {
    const r = await cli("ingest", "-p", "cli-orders");
    expect([r.code, r.stderr.trim()]).toEqual([
      2,
      `straggler: pipeline cli-orders: landing folder ${path.join(ROOT, "no-such-folder")} does not exist`,
    ]);
  });

  it("a named file that does not exist: exit 2 and a plain message, nothing landed", async () => {
    const good = path.join(dataDir, "good.csv");
    writeFileSync(good, "event_time,amount\n2024-01-15T12:01:00Z,10\n");
    const r = await cli("ingest", "-p", "cli-orders", good, path.join(dataDir, "missing.csv"));
    expect([r.code, r.stderr.trim()]).toEqual([2, `straggler: no such file: ${path.join(dataDir, "missing.csv")}`]);
  });

  it("a refused named file is reported by name, the next one lands, and the exit code is 1", async () => {
    const { pool } = await getDb();
    const bad = path.join(dataDir, "bad.csv");
    const good = path.join(dataDir, "good2.csv");
    writeFileSync(bad, "Event_Time,Amount\n2024-01-15T12:01:00Z,10\n");
    writeFileSync(good, "event_time,amount\n2024-01-15T12:02:00Z,20\n");
    const r = await cli("ingest", "-p", "cli-orders", bad, good);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `cli-orders: ${bad} refused: CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime), "amount" (fields.value)`,
    );
    expect(r.stdout).toContain("cli-orders: good2.csv: landed 1, accepted 1, quarantined 0");
    const s = await pool.query(
      "SELECT source, state FROM straggler.sources WHERE pipeline = 'cli-orders' ORDER BY source",
    );
    expect(s.rows).toEqual([
      { source: "bad.csv", state: "refused" },
      { source: "good2.csv", state: "landed" },
    ]);
    // `straggler sources` names each source with its state and reason; --state filters.
    const listed = await cli("sources", "-p", "cli-orders", "--state", "refused");
    expect([listed.code, listed.stdout.split("\n")[0]]).toEqual([
      0,
      "cli-orders: landed 1, refused 1, changed_after_landing 0, waiting_to_settle 0",
    ]);
    expect(listed.stdout.split("\n")[1]).toBe(
      '  refused               file   bad.csv: 0 rows (0 accepted, 0 quarantined), 42 bytes — CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime), "amount" (fields.value); it names: "Event_Time", "Amount"; they differ only in case: set source.csv.headerCase: insensitive',
    );
    const asJson = JSON.parse((await cli("sources", "-p", "cli-orders", "--json")).stdout) as {
      byState: object;
      rows: { source: string; state: string }[];
    };
    expect([asJson.byState, asJson.rows.map((r) => [r.source, r.state]).sort()]).toEqual([
      { landed: 1, refused: 1, changed_after_landing: 0, waiting_to_settle: 0 },
      [
        ["bad.csv", "refused"],
        ["good2.csv", "landed"],
      ],
    ]);
  });
});
