/**
 * The landing folder: every file its own source. Bad files are refused by
 * name and never block the others; half-written files wait to settle; landed
 * files that change are reported; append-only logs land their new complete
 * lines; anything that is not a regular file is refused without blocking.
 * The inputs are issue 10's items 1–3 and issue 11's item 7, with their values.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { LandingDirMissing, SourceRefused } from "../../src/ingest/errors.js";
import { landFile, landStream, openSourceFile } from "../../src/ingest/landFile.js";
import { landPendingFiles, type LandingPassOptions } from "../../src/ingest/landingFolder.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { runUntilCaughtUp } from "../../src/stream/streamLoop.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();
const ROOT = mkdtempSync(path.join(os.tmpdir(), "straggler-landing-folder-"));

/** The common pipeline: CSV event_time / amount, 10-minute windows, 10-minute delay. */
function orders(name: string, source: Record<string, unknown> = {}) {
  const landingDir = path.join(ROOT, name);
  mkdirSync(landingDir, { recursive: true });
  return pipeline({
    name,
    source: { landingDir, format: "csv", settle: "0 seconds", ...source },
    fields: { eventTime: "event_time", value: "amount" },
    timestamps: { format: "iso8601" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
  });
}

/** A logger whose lines are kept, to count what was logged. */
function memoryLog() {
  const lines: { level: number; msg: string; file?: string }[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split("\n")) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: pino({ level: "info" }, stream), lines };
}

const write = (dir: string, name: string, text: string, mtimeMs?: number) => {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  if (mtimeMs !== undefined) utimesSync(file, mtimeMs / 1000, mtimeMs / 1000);
  return file;
};

async function sources(pool: Pool, p: string) {
  const { rows } = await pool.query(
    "SELECT source, kind, state, reason, rows FROM straggler.sources WHERE pipeline = $1 ORDER BY source",
    [p],
  );
  return rows;
}
const stream = (pool: Pool, p: ReturnType<typeof orders>) =>
  runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");

describe("one bad file never blocks another (issue 10.1)", () => {
  it("a spreadsheet export with empty header names lands, b-feed.csv lands, the posted event lands: the window is 60; a real duplicate name is refused by name and logged once", async () => {
    const { pool } = await getDb();
    const p = orders("export");
    const dir = p.source.landingDir!;
    write(dir, "a-export.csv", "event_time,amount,,\r\n2024-01-15T12:01:00Z,10,,\r\n");
    write(dir, "b-feed.csv", "event_time,amount\n2024-01-15T12:02:00Z,20\n");
    write(dir, "c-dup.csv", "event_time,amount,amount\n2024-01-15T12:05:00Z,1000,1\n");
    // The event POSTed over HTTP: JSON, as the events route reads it.
    await landStream(
      pool,
      { ...p, source: { ...p.source, format: "jsonl" } },
      Readable.from(['{"event_time":"2024-01-15T12:03:00Z","amount":30}\n']),
      "http",
    );
    const { log, lines } = memoryLog();
    const pass = await landPendingFiles(pool, p, { log });
    expect(pass.landed.map((r) => [r.source, r.landed, r.accepted])).toEqual([
      ["a-export.csv", 1, 1],
      ["b-feed.csv", 1, 1],
    ]);
    expect(pass.refused).toEqual([{ name: "c-dup.csv", reason: 'CSV header (line 1) names column "amount" twice' }]);
    await stream(pool, p);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=60 open"]);

    // Later passes neither retry nor log the refused file again.
    for (let i = 0; i < 3; i++) expect((await landPendingFiles(pool, p, { log })).refused).toEqual([]);
    expect(lines.filter((l) => l.level === 40).map((l) => [l.file, l.msg])).toEqual([
      ["c-dup.csv", 'file c-dup.csv refused: CSV header (line 1) names column "amount" twice'],
    ]);
    expect((await sources(pool, p.name)).filter((s) => s.kind === "file")).toEqual([
      { source: "a-export.csv", kind: "file", state: "landed", reason: null, rows: 1 },
      { source: "b-feed.csv", kind: "file", state: "landed", reason: null, rows: 1 },
      {
        source: "c-dup.csv",
        kind: "file",
        state: "refused",
        reason: 'CSV header (line 1) names column "amount" twice',
        rows: 0,
      },
    ]);
    // Fixed in place (new size and mtime), it lands.
    write(dir, "c-dup.csv", "event_time,amount\n2024-01-15T12:05:00Z,1000\n");
    expect((await landPendingFiles(pool, p)).landed.map((r) => r.source)).toEqual(["c-dup.csv"]);
  });
});

describe("half-written files wait to settle; landed files that change are reported (issue 10.2)", () => {
  const T = Date.parse("2026-11-30T10:00:00Z");
  const at = (ms: number): LandingPassOptions => ({ nowMs: () => ms });

  it("a file cut mid-value is not landed until quiet for the settle period: 162.50 from 4 events, never 42.00", async () => {
    const { pool } = await getDb();
    const p = orders("settle", { settle: "2 seconds" });
    const dir = p.source.landingDir!;
    const head = "event_time,amount\n2024-01-15T12:01:00Z,10.00\n2024-01-15T12:02:00Z,20.00\n2024-01-15T12:03:00Z,12";
    write(dir, "orders.csv", head, T);
    const first = await landPendingFiles(pool, p, at(T + 1_000));
    expect([first.landed, first.waiting]).toEqual([[], ["orders.csv"]]);
    expect(await sources(pool, p.name)).toEqual([
      { source: "orders.csv", kind: "file", state: "waiting_to_settle", reason: null, rows: 0 },
    ]);
    // The writer finishes 1.5 s later: the file is quiet only 2 s after that.
    write(dir, "orders.csv", head + "5.50\n2024-01-15T12:04:00Z,7.00\n", T + 1_500);
    expect((await landPendingFiles(pool, p, at(T + 3_000))).waiting).toEqual(["orders.csv"]);
    const landed = await landPendingFiles(pool, p, at(T + 3_500));
    expect(landed.landed.map((r) => [r.source, r.landed, r.accepted])).toEqual([["orders.csv", 4, 4]]);
    await stream(pool, p);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=162.50 open"]);
  });

  it("an empty file (created, then written) waits for content however long it stays empty, then lands its rows", async () => {
    const { pool } = await getDb();
    const p = orders("empty-first", { settle: "2 seconds" });
    const dir = p.source.landingDir!;
    write(dir, "later.csv", "", T);
    const first = await landPendingFiles(pool, p, at(T + 60_000));
    expect([first.landed, first.waiting]).toEqual([[], ["later.csv"]]);
    expect(await sources(pool, p.name)).toEqual([
      { source: "later.csv", kind: "file", state: "waiting_to_settle", reason: "empty: waits for content", rows: 0 },
    ]);
    write(dir, "later.csv", "event_time,amount\n2024-01-15T12:05:00Z,30.00\n", T + 70_000);
    const landed = await landPendingFiles(pool, p, at(T + 73_000));
    expect(landed.landed.map((r) => [r.source, r.landed, r.accepted])).toEqual([["later.csv", 1, 1]]);
    await stream(pool, p);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=30.00 open"]);
  });

  it("a landed file whose bytes change is changed_after_landing, logged once, not landed again; a touch with the same bytes is not a change", async () => {
    const { pool } = await getDb();
    const p = orders("changed");
    const dir = p.source.landingDir!;
    write(dir, "a.csv", "event_time,amount\n2024-01-15T12:01:00Z,10\n", T);
    write(dir, "touched.csv", "event_time,amount\n2024-01-15T12:02:00Z,20\n", T);
    expect((await landPendingFiles(pool, p)).landed.map((r) => r.source)).toEqual(["a.csv", "touched.csv"]);
    appendFileSync(path.join(dir, "a.csv"), "2024-01-15T12:03:00Z,30\n");
    utimesSync(path.join(dir, "touched.csv"), (T + 5_000) / 1000, (T + 5_000) / 1000);
    const { log, lines } = memoryLog();
    const pass = await landPendingFiles(pool, p, { log });
    expect([pass.landed, pass.changed]).toEqual([[], ["a.csv"]]);
    expect((await landPendingFiles(pool, p, { log })).changed).toEqual([]);
    const warned = lines.filter((l) => l.level === 40);
    expect(warned.map((l) => l.file)).toEqual(["a.csv"]);
    expect(warned[0]!.msg).toMatch(
      /^file a\.csv changed after landing: size 42 -> 66 bytes, SHA-256 [0-9a-f]{12}… -> [0-9a-f]{12}…; not landed again$/,
    );
    expect((await sources(pool, p.name)).map((s) => [s.source, s.state, s.rows])).toEqual([
      ["a.csv", "changed_after_landing", 1],
      ["touched.csv", "landed", 1],
    ]);
    await stream(pool, p);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=30 open"]);
  });

  it("a settled file whose last line has no newline lands that line (the file has been quiet for the settle period)", async () => {
    const { pool } = await getDb();
    const p = orders("no-final-newline");
    write(p.source.landingDir!, "x.csv", "event_time,amount\n2024-01-15T12:01:00Z,10\n2024-01-15T12:02:00Z,2.5");
    expect((await landPendingFiles(pool, p)).landed.map((r) => r.landed)).toEqual([2]);
    await stream(pool, p);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=12.5 open"]);
  });

  it("source.appendOnly: a growing log lands only its new complete lines, the header read from the start; a line without its newline waits; a log that shrinks is changed", async () => {
    const { pool } = await getDb();
    const p = orders("append", { appendOnly: true });
    const file = write(
      p.source.landingDir!,
      "log.csv",
      "event_time,amount\n2024-01-15T12:01:00Z,10.00\n2024-01-15T12:02:00Z,20.00\n2024-01-15T12:03:00Z,12",
    );
    expect((await landPendingFiles(pool, p)).landed.map((r) => [r.source, r.landed])).toEqual([["log.csv", 2]]);
    expect((await landPendingFiles(pool, p)).landed).toEqual([]); // only a partial line is new
    appendFileSync(file, "5.50\n2024-01-15T12:04:00Z,7.00\n");
    const offset = Buffer.byteLength("event_time,amount\n2024-01-15T12:01:00Z,10.00\n2024-01-15T12:02:00Z,20.00\n");
    expect((await landPendingFiles(pool, p)).landed.map((r) => [r.source, r.landed])).toEqual([
      [`log.csv@${offset}`, 2],
    ]);
    const ids = await pool.query("SELECT event_id FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq", [p.name]);
    expect(ids.rows.map((r) => r.event_id)).toEqual(["log.csv:2", "log.csv:3", "log.csv:4", "log.csv:5"]);
    await stream(pool, p);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=162.50 open"]);
    expect(await sources(pool, p.name)).toEqual([
      { source: "log.csv", kind: "file", state: "landed", reason: null, rows: 4 },
    ]);
    truncateSync(file, 10);
    expect((await landPendingFiles(pool, p)).changed).toEqual(["log.csv"]);
    expect((await sources(pool, p.name))[0].reason).toBe(
      `changed after landing: shrank from ${offset + 54} landed bytes to 10 bytes; not landed again`,
    );
  });
});

describe("a header that does not name the configured fields (issue 10.3)", () => {
  it("is refused before any row lands, not recorded as landed, named with the missing and present columns; after the config is fixed it lands: 60", async () => {
    const { pool } = await getDb();
    const p = orders("header");
    write(
      p.source.landingDir!,
      "orders.csv",
      "Event_Time,Amount\n2024-01-15T12:01:00Z,10\n2024-01-15T12:02:00Z,20\n2024-01-15T12:03:00Z,30\n",
    );
    const pass = await landPendingFiles(pool, p);
    const reason =
      'CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime), "amount" (fields.value); it names: "Event_Time", "Amount"; they differ only in case: set source.csv.headerCase: insensitive';
    expect(pass.refused).toEqual([{ name: "orders.csv", reason }]);
    const counts = await pool.query(
      "SELECT (SELECT count(*)::int FROM straggler.bronze WHERE pipeline = $1) AS bronze, (SELECT count(*)::int FROM straggler.landed_sources WHERE pipeline = $1) AS landed",
      [p.name],
    );
    expect(counts.rows[0]).toEqual({ bronze: 0, landed: 0 });
    expect((await landPendingFiles(pool, p)).refused).toEqual([]); // not retried while nothing changed
    // The config is fixed: the refused file is tried again and lands.
    const fixed = { ...p, source: { ...p.source, csv: { ...p.source.csv, headerCase: "insensitive" as const } } };
    expect((await landPendingFiles(pool, fixed)).landed.map((r) => [r.source, r.accepted])).toEqual([
      ["orders.csv", 3],
    ]);
    await stream(pool, fixed);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=60 open"]);
  });
});

describe("special files in the landing folder (issue 11.7)", () => {
  it("a FIFO and a socket are refused without blocking, and the regular file beside them lands", async () => {
    const { pool } = await getDb();
    const p = orders("special");
    const dir = p.source.landingDir!;
    execFileSync("mkfifo", [path.join(dir, "a-fifo.csv")]);
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(path.join(dir, "b-socket.csv"), r));
    try {
      write(dir, "c-plain.csv", "event_time,amount\n2024-01-15T12:01:00Z,10\n");
      const pass = await landPendingFiles(pool, p);
      expect(pass.landed.map((r) => r.source)).toEqual(["c-plain.csv"]);
      expect(pass.refused).toEqual([
        { name: "a-fifo.csv", reason: "not a regular file: a FIFO" },
        { name: "b-socket.csv", reason: "not a regular file: a socket" },
      ]);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it("one swapped in after the listing is refused when opened (O_NONBLOCK | O_NOFOLLOW, then fstat): a FIFO with no writer never blocks the open", async () => {
    const { pool } = await getDb();
    const p = orders("swapped");
    const fifo = path.join(p.source.landingDir!, "swap.csv");
    execFileSync("mkfifo", [fifo]);
    await expect(openSourceFile(fifo, true)).rejects.toThrow(new SourceRefused("not a regular file: a FIFO"));
    await expect(landFile(pool, p, fifo, "swap.csv", { noFollow: true })).rejects.toThrow("not a regular file: a FIFO");
    expect(await sources(pool, p.name)).toEqual([
      { source: "swap.csv", kind: "file", state: "refused", reason: "not a regular file: a FIFO", rows: 0 },
    ]);
  });
});

describe("a landing folder that does not exist (issue 10.9)", () => {
  it("is reported, not taken for an empty folder", async () => {
    const { pool } = await getDb();
    const p = {
      ...orders("nodir"),
      source: { ...orders("nodir").source, landingDir: path.join(ROOT, "no-such-folder") },
    };
    await expect(landPendingFiles(pool, p)).rejects.toThrow(
      new LandingDirMissing(path.join(ROOT, "no-such-folder"), "does not exist"),
    );
  });
});
