/**
 * Records that are not lines (RFC 4180, as csv-parse reads them): a quoted CSV field holding a line
 * end (LF, CRLF, a lone CR) is part of one record on every ingest path that reads CSV: a named file,
 * stdin, the landing folder (whole files and append-only pieces) and replay. The bronze row's raw
 * text is the record's full text with its line ends; no text inside a field becomes an event; a quote
 * still open at the end of a file is one MALFORMED record. (HTTP bodies are JSON only: text/csv is a 415.)
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { landPendingFiles } from "../../src/ingest/landingFolder.js";
import { replay } from "../../src/replay/replay.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const DIR = mkdtempSync(path.join(tmpdir(), "straggler-multiline-"));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));
let n = 0;
const LANDED = Date.UTC(2024, 0, 15, 13, 0);

function csvPipeline(extra: Record<string, unknown> = {}) {
  const name = `ml-${++n}`;
  const dir = path.join(DIR, name);
  mkdirSync(dir);
  return pipeline({
    name,
    source: { landingDir: dir, format: "csv", settle: "0 seconds", ...extra },
    fields: { eventId: "id", eventTime: "t", value: "amount" },
    window: { type: "tumbling", size: "1 hour" },
    watermark: { delay: "1 hour" },
    admission: { maxFutureSkew: null },
  });
}

/** Three records; the second's note holds a CRLF, an LF and a line that looks like a record of its own. */
const FILE =
  "id,t,amount,note,arrived\r\n" +
  "a,2024-01-15T12:01:00Z,10,plain,2024-01-15T12:01:00Z\r\n" +
  'b,2024-01-15T12:02:00Z,20,"first line\r\nz,2024-01-15T12:03:00Z,999,inside,2024-01-15T12:03:00Z\nlast line",2024-01-15T12:02:00Z\r\n' +
  'c,2024-01-15T12:04:00Z,30,"a lone\rCR",2024-01-15T12:04:00Z\r\n';
const NOTE_B = "first line\r\nz,2024-01-15T12:03:00Z,999,inside,2024-01-15T12:03:00Z\nlast line";
const RAW_B = `b,2024-01-15T12:02:00Z,20,"${NOTE_B}",2024-01-15T12:02:00Z`;

async function rows(pool: Pool, name: string) {
  return (
    await pool.query(
      "SELECT event_id, source_line, status, reason, detail, value, raw FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq",
      [name],
    )
  ).rows;
}
const accepted = (id: string, line: number, value: string, raw: string) => ({
  event_id: id,
  source_line: line,
  status: "accepted",
  reason: null,
  detail: null,
  value,
  raw,
});
const EXPECTED = [
  accepted("a", 2, "10", "a,2024-01-15T12:01:00Z,10,plain,2024-01-15T12:01:00Z"),
  accepted("b", 3, "20", RAW_B),
  accepted("c", 6, "30", 'c,2024-01-15T12:04:00Z,30,"a lone\rCR",2024-01-15T12:04:00Z'),
];

describe("a quoted field spanning lines is one record on every CSV path", () => {
  it("a named file (straggler ingest -p P file): three records, the raw text of each byte for byte", async () => {
    const { pool } = await getDb();
    const p = csvPipeline();
    const file = path.join(DIR, `${p.name}.csv`);
    writeFileSync(file, FILE);
    const r = await landFile(pool, p, file, "orders.csv", { landingTimeMs: LANDED });
    expect([r.landed, r.accepted, r.quarantined]).toEqual([3, 3, 0]);
    expect(await rows(pool, p.name)).toEqual(EXPECTED);
  });

  it("stdin", async () => {
    const { pool } = await getDb();
    const p = csvPipeline();
    // Chunked inside the quoted field and between a CR and its LF.
    const cut1 = FILE.indexOf("first line") + 5,
      cut2 = FILE.indexOf("\r\nz,") + 1;
    const chunks = [FILE.slice(0, cut1), FILE.slice(cut1, cut2), FILE.slice(cut2)].map((c) => Buffer.from(c));
    const r = await landStream(pool, p, Readable.from(chunks), "stdin", LANDED);
    expect([r.landed, r.accepted]).toEqual([3, 3]);
    expect(await rows(pool, p.name)).toEqual(EXPECTED);
  });

  it("the landing folder", async () => {
    const { pool } = await getDb();
    const p = csvPipeline();
    writeFileSync(path.join(p.source.landingDir!, "orders.csv"), FILE);
    const pass = await landPendingFiles(pool, p, { nowMs: () => Date.now() + 60_000 });
    expect(pass.landed.map((l) => [l.source, l.landed, l.accepted])).toEqual([["orders.csv", 3, 3]]);
    expect(await rows(pool, p.name)).toEqual(EXPECTED);
  });

  it("replay", async () => {
    const { pool } = await getDb();
    const p = csvPipeline();
    const file = path.join(DIR, `${p.name}-replay.csv`);
    writeFileSync(file, FILE);
    const summary = await replay(pool, p, { files: [file], arrivalField: "arrived", batchSpanMs: 3_600_000 });
    expect(summary.rowsLanded).toBe(3);
    expect((await rows(pool, p.name)).map((r) => [r.event_id, r.source_line, r.status, r.value, r.raw])).toEqual(
      EXPECTED.map((r) => [r.event_id, r.source_line, r.status, r.value, r.raw]),
    );
  });

  it("a quote still open at the end of a file is one MALFORMED record with all its text; nothing after the quote is an event", async () => {
    const { pool } = await getDb();
    const p = csvPipeline();
    const file = path.join(DIR, `${p.name}.csv`);
    const tail = 'b,2024-01-15T12:02:00Z,20,"never closed\nz,2024-01-15T12:03:00Z,999,inside,x\n';
    writeFileSync(file, "id,t,amount,note,arrived\na,2024-01-15T12:01:00Z,10,plain,x\n" + tail);
    const r = await landFile(pool, p, file, "open.csv", { landingTimeMs: LANDED });
    expect([r.landed, r.accepted, r.quarantined, r.byReason]).toEqual([2, 1, 1, { MALFORMED: 1 }]);
    expect((await rows(pool, p.name)).map((x) => [x.event_id, x.source_line, x.status, x.detail, x.raw])).toEqual([
      ["a", 2, "accepted", null, "a,2024-01-15T12:01:00Z,10,plain,x"],
      ["open.csv:3", 3, "quarantined", "a quoted field is not closed at the end of the input", tail.slice(0, -1)],
    ]);
  });

  it("append-only: a piece that ends inside a quoted field lands the complete records; the rest lands with the next piece, whole", async () => {
    const { pool } = await getDb();
    const p = csvPipeline({ appendOnly: true });
    const file = path.join(p.source.landingDir!, "log.csv");
    const cut = FILE.indexOf("z,2024");
    writeFileSync(file, FILE.slice(0, cut));
    const first = await landPendingFiles(pool, p);
    expect(first.landed.map((l) => [l.source, l.landed])).toEqual([["log.csv", 1]]);
    const landedBytes = (
      await pool.query(
        "SELECT landed_bytes::int AS b, landed_lines::int AS l FROM straggler.source_files WHERE pipeline = $1",
        [p.name],
      )
    ).rows[0];
    expect(landedBytes).toEqual({ b: FILE.indexOf("b,2024"), l: 2 });
    appendFileSync(file, FILE.slice(cut));
    utimesSync(file, new Date(), new Date(Date.now() + 1000));
    const second = await landPendingFiles(pool, p);
    expect(second.landed.map((l) => [l.source, l.landed])).toEqual([[`log.csv@${FILE.indexOf("b,2024")}`, 2]]);
    expect((await rows(pool, p.name)).map((r) => [r.event_id, r.source_line, r.value, r.raw])).toEqual(
      EXPECTED.map((r) => [r.event_id, r.source_line, r.value, r.raw]),
    );
  });

  it("CR-only line ends: an append-only file lands line by line; a CR as the file's last byte waits (it may be the start of a CRLF)", async () => {
    const { pool } = await getDb();
    const p = csvPipeline({ appendOnly: true });
    const file = path.join(p.source.landingDir!, "mac.csv");
    writeFileSync(file, "id,t,amount\ra,2024-01-15T12:01:00Z,10\rb,2024-01-15T12:02:00Z,20\r");
    const pass = await landPendingFiles(pool, p);
    expect(pass.landed.map((l) => [l.source, l.landed, l.accepted])).toEqual([["mac.csv", 1, 1]]);
    appendFileSync(file, "c,2024-01-15T12:03:00Z,30\r");
    const next = await landPendingFiles(pool, p);
    const at = "id,t,amount\ra,2024-01-15T12:01:00Z,10\r".length;
    expect(next.landed.map((l) => [l.source, l.landed, l.accepted])).toEqual([[`mac.csv@${at}`, 1, 1]]);
    expect((await rows(pool, p.name)).map((r) => [r.event_id, r.source_line, r.raw])).toEqual([
      ["a", 2, "a,2024-01-15T12:01:00Z,10"],
      ["b", 3, "b,2024-01-15T12:02:00Z,20"],
    ]);
  });
});
