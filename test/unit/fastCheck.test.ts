/**
 * The replay's check pass on bytes (src/replay/fastCheck.ts): where it decides, the same spans, records, header
 * and refusal as the full check (src/replay/checkOrder.ts with `checkOnBytes: false`); every kind of file it
 * cannot read on bytes (a quote, a CR, a byte order mark, a byte past ASCII, a blank line that is not empty, a
 * record short of or past the header's fields, an unnamed column, no or an unreadable arrival time, a line past
 * the record limit, another dialect) left to the full check.
 */
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { checkOrder } from "../../src/replay/checkOrder.js";
import { fastCheck } from "../../src/replay/fastCheck.js";
import { pipeline } from "../helpers/fixtures.js";

const HEADER = "id,event_time,arrived,note";
const config = (source: Record<string, unknown> = {}) =>
  pipeline({
    name: "check",
    source: { format: "csv", ...source },
    fields: { eventId: "id", eventTime: "event_time" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
  });
const HOUR = 3_600_000;
const T0 = Date.UTC(2024, 0, 15, 12);

/** `n` records a minute apart, in arrival order. */
const rows = (n: number) =>
  Array.from({ length: n }, (_, i) => {
    const at = new Date(T0 + i * 60_000).toISOString();
    return `e${i},${at},${at},n${i}`;
  });

function write(text: string | Buffer): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "straggler-fast-")), "f.csv");
  writeFileSync(file, text);
  return file;
}

/** The full check's answer (spans and total, or null) and the header it read. */
async function full(file: string, p = config()) {
  const headers = new Set<string>();
  const opts = { files: [file], arrivalField: "arrived", batchSpanMs: HOUR, checkOnBytes: false };
  const r = await checkOrder(p, opts, file, statSync(file).size, headers, false);
  return r === null ? null : { ...r, header: [...headers][0] };
}

const fast = (file: string, p = config()) => fastCheck(p, file, "arrived", HOUR);

describe("the replay's check pass on bytes", () => {
  it("decides a plain file as the full check does: spans, records and header", async () => {
    const file = write([HEADER, ...rows(150)].join("\n") + "\n");
    const r = await fast(file);
    expect(r).toEqual({
      spans: [
        { start: T0, rows: 60 },
        { start: T0 + HOUR, rows: 60 },
        { start: T0 + 2 * HOUR, rows: 30 },
      ],
      total: 150,
      header: HEADER,
    });
    expect(await full(file)).toEqual(r);
  });

  it("reads a last line without a newline as a record, and skips empty lines, as the full check does", async () => {
    for (const text of [
      [HEADER, ...rows(61)].join("\n"),
      [HEADER, "", ...rows(30), "", "", ...rows(61).slice(30)].join("\n") + "\n\n",
    ]) {
      const file = write(text);
      const r = await fast(file);
      expect(r).toEqual({
        spans: [
          { start: T0, rows: 60 },
          { start: T0 + HOUR, rows: 1 },
        ],
        total: 61,
        header: HEADER,
      });
      expect(await full(file)).toEqual(r);
    }
  });

  it("refuses a file that goes back in time (null: the file is staged), to the microsecond, as the full check does", async () => {
    const back = rows(10);
    [back[4], back[5]] = [back[5]!, back[4]!];
    const us = [
      HEADER,
      "a,2024-01-15T12:00:00.000002Z,2024-01-15T12:00:00.000002Z,x",
      "b,2024-01-15T12:00:00.000001Z,2024-01-15T12:00:00.000001Z,y",
    ];
    for (const lines of [[HEADER, ...back], us]) {
      const file = write(lines.join("\n") + "\n");
      expect(await fast(file)).toBeNull();
      expect(await full(file)).toBeNull();
    }
  });

  it("reads an arrival time with blanks around it as the full check does (the same parser)", async () => {
    const at = new Date(T0).toISOString();
    const file = write([HEADER, `a,${at}, ${at} ,x`].join("\n") + "\n");
    const r = await fast(file);
    expect(r).toEqual({ spans: [{ start: T0, rows: 1 }], total: 1, header: HEADER });
    expect(await full(file)).toEqual(r);
  });

  it("counts records of equal arrival in one span, in order", async () => {
    const at = new Date(T0).toISOString();
    const file = write([HEADER, `a,${at},${at},x`, `b,${at},${at},y`].join("\n") + "\n");
    const r = await fast(file);
    expect(r).toEqual({ spans: [{ start: T0, rows: 2 }], total: 2, header: HEADER });
    expect(await full(file)).toEqual(r);
  });

  it("leaves every file it cannot read on bytes to the full check (undefined), which decides as before", async () => {
    const ok = rows(3);
    const at = new Date(T0).toISOString();
    const kinds: [string, string | Buffer, ReturnType<typeof config>?][] = [
      ["a quoted field", [HEADER, ...ok, `"e9",${at},${at},"a, b"`].join("\n") + "\n"],
      ["CRLF line ends", [HEADER, ...ok].join("\r\n") + "\r\n"],
      ["a UTF-8 byte order mark", "\uFEFF" + [HEADER, ...ok].join("\n") + "\n"],
      ["a byte past ASCII", [HEADER, ...ok, `e9,${at},${at},café`].join("\n") + "\n"],
      [
        "invalid UTF-8",
        Buffer.concat([Buffer.from([HEADER, ...ok].join("\n") + "\n"), Buffer.from([0x65, 0x39, 0xff, 0x0a])]),
      ],
      ["a NUL", [HEADER, ...ok, `e9,${at},${at},a\u0000b`].join("\n") + "\n"],
      ["a line of blanks", [HEADER, ok[0], "   ", ...ok.slice(1)].join("\n") + "\n"],
      ["a record short of the header's fields", [HEADER, ...ok, `e9,${at},${at}`].join("\n") + "\n"],
      ["a record past the header's fields", [HEADER, ...ok, `e9,${at},${at},x,y`].join("\n") + "\n"],
      [
        "a record past the header's fields, the extra one empty",
        [HEADER, ...ok, `e9,${at},${at},x,`].join("\n") + "\n",
      ],
      ["an unnamed column", ["id,event_time,arrived,", ...ok].join("\n") + "\n"],
      ["no arrival time", [HEADER, ...ok, `e9,${at},,x`].join("\n") + "\n"],
      ["an arrival time of blanks", [HEADER, ...ok, `e9,${at},  ,x`].join("\n") + "\n"],
      ["an unreadable arrival time", [HEADER, ...ok, `e9,${at},soon,x`].join("\n") + "\n"],
      ["no arrival column", ["id,event_time,when,note", ...ok].join("\n") + "\n"],
      ["a blank line before the header", ["", HEADER, ...ok].join("\n") + "\n"],
      ["a header naming a column twice", ["id,event_time,arrived,id", ...ok].join("\n") + "\n"],
      ["a header without a column the pipeline reads", ["key,event_time,arrived,note", ...ok].join("\n") + "\n"],
      ["an empty file", ""],
      [
        "a line past the record limit",
        [HEADER, ...ok, `e9,${at},${at},${"x".repeat(1100)}`].join("\n") + "\n",
        config({ maxRecordBytes: 1024 }),
      ],
      [
        "a semicolon dialect",
        [HEADER.replaceAll(",", ";"), ...ok.map((l) => l.replaceAll(",", ";"))].join("\n") + "\n",
        config({ csv: { delimiter: ";" } }),
      ],
      ["a comment dialect", [HEADER, "# note", ...ok].join("\n") + "\n", config({ csv: { comment: "#" } })],
      ["trimmed fields", [HEADER, ...ok].join("\n") + "\n", config({ csv: { trim: true } })],
    ];
    const decided: string[] = [];
    for (const [kind, text, p] of kinds) {
      const file = write(text);
      if ((await fast(file, p)) !== undefined) decided.push(kind);
    }
    expect(decided).toEqual([]);
  });

  it("reads a line longer than one read of the file (4 MiB) where the record limit allows it, as the full check does", async () => {
    const p = config({ maxRecordBytes: 8 * 2 ** 20 });
    const at = new Date(T0).toISOString();
    const file = write([HEADER, `a,${at},${at},${"x".repeat(5 * 2 ** 20)}`, `b,${at},${at},y`].join("\n") + "\n");
    const r = await fast(file, p);
    expect(r).toEqual({ spans: [{ start: T0, rows: 2 }], total: 2, header: HEADER });
    expect(await full(file, p)).toEqual(r);
  });

  it("reads lines that cross the reads of the file (4 MiB each)", async () => {
    const lines = rows(120_000);
    const file = write([HEADER, ...lines].join("\n") + "\n");
    const r = await fast(file);
    expect(r).not.toBeUndefined();
    expect(r).toEqual(await full(file));
    expect(r!.total).toBe(120_000);
  });
});
