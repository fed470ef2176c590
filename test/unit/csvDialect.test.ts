import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { RawRecord } from "../../src/core/admission.js";
import { DEFAULT_CSV_DIALECT, type CsvDialect, type RequiredColumn } from "../../src/ingest/csvRecords.js";
import { SourceRefused } from "../../src/ingest/errors.js";
import { headerColumns, readRecords, storedRecord, type ReadOptions } from "../../src/ingest/readers.js";

const req = (...columns: string[]): RequiredColumn[] =>
  columns.map((column) => ({ column, configField: column === "event_time" ? "fields.eventTime" : "fields.value" }));

async function read(text: string, opts: ReadOptions = {}, csv: Partial<CsvDialect> = {}): Promise<RawRecord[]> {
  const out: RawRecord[] = [];
  for await (const r of readRecords(Readable.from([Buffer.from(text, "utf8")]), "csv", {
    ...opts,
    csv: { ...DEFAULT_CSV_DIALECT, ...csv },
  }))
    out.push(r);
  return out;
}
const brief = (records: RawRecord[]) => records.map((r) => [r.line, r.fields ?? r.parseError]);

describe("CSV header: padding columns, duplicates, the columns a pipeline reads", () => {
  it("a spreadsheet export's empty header names are padding: its rows are read, empty padding values ignored (CRLF)", async () => {
    const records = await read("event_time,amount,,\r\n2024-01-15T12:01:00Z,10,,\r\n2024-01-15T12:02:00Z,5\r\n", {
      required: req("event_time", "amount"),
    });
    expect(brief(records)).toEqual([
      [2, { event_time: "2024-01-15T12:01:00Z", amount: "10" }],
      [3, { event_time: "2024-01-15T12:02:00Z", amount: "5" }],
    ]);
  });

  it("a value in an unnamed column makes the record MALFORMED: it must not vanish in silence", async () => {
    expect(brief(await read("event_time,amount,\n2024-01-15T12:01:00Z,10,oops\n"))).toEqual([
      [2, "a value in column 3, which the header leaves unnamed"],
    ]);
  });

  it("a header naming a real column twice is refused by name (also case-insensitively when headers are matched so)", async () => {
    await expect(read("event_time,amount,amount\n")).rejects.toThrow(
      new SourceRefused('CSV header (line 1) names column "amount" twice'),
    );
    await expect(read("event_time,Amount,AMOUNT\n", {}, { headerCase: "insensitive" })).rejects.toThrow(
      'CSV header (line 1) names column "AMOUNT" twice',
    );
  });

  it("a header that does not name the configured columns is refused before any row, naming the missing and the present ones", async () => {
    await expect(
      read("Event_Time,Amount\n2024-01-15T12:01:00Z,10\n", { required: req("event_time", "amount") }),
    ).rejects.toThrow(
      'CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime), "amount" (fields.value); it names: "Event_Time", "Amount"; they differ only in case: set source.csv.headerCase: insensitive',
    );
    await expect(read("time,amount\n", { required: req("event_time", "amount") })).rejects.toThrow(
      'CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime); it names: "time", "amount"',
    );
  });

  it("headerCase: insensitive reads Event_Time as event_time", async () => {
    const records = await read(
      "Event_Time,AMOUNT,Note\n2024-01-15T12:01:00Z,10,x\n",
      { required: req("event_time", "amount") },
      { headerCase: "insensitive" },
    );
    expect(brief(records)).toEqual([[2, { event_time: "2024-01-15T12:01:00Z", amount: "10", Note: "x" }]]);
  });
});

describe("CSV dialects (source.csv)", () => {
  it("delimiter, quote and escape map onto csv-parse's; a BOM is removed", async () => {
    const records = await read(
      "\uFEFFt;amount;note\n2024-01-15T12:01:00Z;1,5;'it\\'s; fine'\n",
      {},
      { delimiter: ";", quote: "'", escape: "\\" },
    );
    expect(brief(records)).toEqual([[2, { t: "2024-01-15T12:01:00Z", amount: "1,5", note: "it's; fine" }]]);
  });

  it("a stray quote inside an unquoted field is MALFORMED by default and read as text with relaxQuotes", async () => {
    const text = 't,amount,note\n2024-01-15T12:01:00Z,10,5" screen\n';
    expect((await read(text))[0]!.parseError).toMatch(/^invalid CSV: /);
    expect(brief(await read(text, {}, { relaxQuotes: true }))).toEqual([
      [2, { t: "2024-01-15T12:01:00Z", amount: "10", note: '5" screen' }],
    ]);
  });

  it("a quoted field spanning lines is one record (RFC 4180, the default); with multiline: false it is one MALFORMED record, never two", async () => {
    const text = 't,amount,note\n2024-01-15T12:01:00Z,10,"two\nlines, one ""field"""\n2024-01-15T12:02:00Z,20,plain\n';
    const records = await read(text);
    expect(brief(records)).toEqual([
      [2, { t: "2024-01-15T12:01:00Z", amount: "10", note: 'two\nlines, one "field"' }],
      [4, { t: "2024-01-15T12:02:00Z", amount: "20", note: "plain" }],
    ]);
    expect(records[0]!.raw).toBe('2024-01-15T12:01:00Z,10,"two\nlines, one ""field"""');
    expect(brief(await read(text, {}, { multiline: false }))).toEqual([
      [2, "a quoted field spans lines (source.csv.multiline: false)"],
      [4, { t: "2024-01-15T12:02:00Z", amount: "20", note: "plain" }],
    ]);
  });

  it("records are what csv-parse says: CRLF and a lone CR inside quotes are kept in the field and in the raw text, byte for byte", async () => {
    const text =
      't,amount,note\r\n2024-01-15T12:01:00Z,10,"a\r\nb"\r\n2024-01-15T12:02:00Z,20,"c\rd"\r\n2024-01-15T12:03:00Z,30,"e\n\nf"\r\n';
    const records = await read(text);
    expect(records.map((r) => [r.line, r.fields, r.raw])).toEqual([
      [2, { t: "2024-01-15T12:01:00Z", amount: "10", note: "a\r\nb" }, '2024-01-15T12:01:00Z,10,"a\r\nb"'],
      [4, { t: "2024-01-15T12:02:00Z", amount: "20", note: "c\rd" }, '2024-01-15T12:02:00Z,20,"c\rd"'],
      [6, { t: "2024-01-15T12:03:00Z", amount: "30", note: "e\n\nf" }, '2024-01-15T12:03:00Z,30,"e\n\nf"'],
    ]);
  });

  it("CR-only line ends (classic Mac) are records like any others, with quoted line ends inside fields", async () => {
    const text = 't,amount,note\r2024-01-15T12:01:00Z,10,x\r2024-01-15T12:02:00Z,20,"y\rz"\r2024-01-15T12:03:00Z,30,w';
    expect(brief(await read(text))).toEqual([
      [2, { t: "2024-01-15T12:01:00Z", amount: "10", note: "x" }],
      [3, { t: "2024-01-15T12:02:00Z", amount: "20", note: "y\rz" }],
      [5, { t: "2024-01-15T12:03:00Z", amount: "30", note: "w" }],
    ]);
  });

  it("a quote still open at the end of the input is one MALFORMED record holding all its lines; a quote at the very end closes its record", async () => {
    const open =
      't,amount,note\n2024-01-15T12:01:00Z,10,ok\n2024-01-15T12:02:00Z,20,"never\n2024-01-15T12:03:00Z,30,closed\n';
    const records = await read(open);
    expect(records.map((r) => [r.line, r.fields ?? r.parseError, r.raw])).toEqual([
      [2, { t: "2024-01-15T12:01:00Z", amount: "10", note: "ok" }, "2024-01-15T12:01:00Z,10,ok"],
      [
        3,
        "a quoted field is not closed at the end of the input",
        '2024-01-15T12:02:00Z,20,"never\n2024-01-15T12:03:00Z,30,closed',
      ],
    ]);
    expect(brief(await read('t,amount,note\n2024-01-15T12:01:00Z,10,"end\nof file"'))).toEqual([
      [2, { t: "2024-01-15T12:01:00Z", amount: "10", note: "end\nof file" }],
    ]);
  });

  it("a multi-line record split across input chunks is the same record (chunk ends inside quotes, between CR and LF)", async () => {
    const text = 't,amount,note\r\n2024-01-15T12:01:00Z,10,"a\r\nb"\r\n2024-01-15T12:02:00Z,20,c\r\n';
    const whole = await read(text);
    for (let cut = 1; cut < text.length; cut++) {
      const out: RawRecord[] = [];
      const chunks = [Buffer.from(text.slice(0, cut)), Buffer.from(text.slice(cut))];
      for await (const r of readRecords(Readable.from(chunks), "csv", { csv: DEFAULT_CSV_DIALECT })) out.push(r);
      expect(out, `cut at ${cut}`).toEqual(whole);
    }
    expect(brief(whole)).toEqual([
      [2, { t: "2024-01-15T12:01:00Z", amount: "10", note: "a\r\nb" }],
      [4, { t: "2024-01-15T12:02:00Z", amount: "20", note: "c" }],
    ]);
  });

  it("a rebuild reads a stored multi-line record as landing read it (storedRecord): one record, CRLF kept; MALFORMED under multiline: false", () => {
    const columns = headerColumns("t,amount,note", { csv: DEFAULT_CSV_DIALECT });
    const raw = '2024-01-15T12:01:00Z,10,"a\r\nb"';
    expect(storedRecord(raw, 2, "csv", DEFAULT_CSV_DIALECT, columns)).toEqual({
      line: 2,
      raw,
      fields: { t: "2024-01-15T12:01:00Z", amount: "10", note: "a\r\nb" },
    });
    expect(storedRecord(raw, 2, "csv", { ...DEFAULT_CSV_DIALECT, multiline: false }, columns)).toEqual({
      line: 2,
      raw,
      fields: null,
      parseError: "a quoted field spans lines (source.csv.multiline: false)",
    });
  });

  it("append-only pieces: a record whose quote is still open waits, the position stays at the last complete record", async () => {
    const position = { offset: 0, line: 0 };
    const head = "t,amount,note\n2024-01-15T12:01:00Z,10,x\n";
    const out: RawRecord[] = [];
    for await (const r of readRecords(
      Readable.from([Buffer.from(head + '2024-01-15T12:02:00Z,20,"still\nbeing written\n')]),
      "csv",
      { csv: DEFAULT_CSV_DIALECT, unterminated: "hold", position },
    ))
      out.push(r);
    expect(brief(out)).toEqual([[2, { t: "2024-01-15T12:01:00Z", amount: "10", note: "x" }]]);
    expect(position).toEqual({ offset: Buffer.byteLength(head), line: 2 });
  });

  it("invalid UTF-8 on a continuation line makes the multi-line record MALFORMED", async () => {
    const bytes = Buffer.concat([
      Buffer.from('t,amount,note\n2024-01-15T12:01:00Z,10,"a\n'),
      Buffer.from([0xff]),
      Buffer.from('"\n2024-01-15T12:02:00Z,20,b\n'),
    ]);
    const out: RawRecord[] = [];
    for await (const r of readRecords(Readable.from([bytes]), "csv", {
      csv: { ...DEFAULT_CSV_DIALECT, multiline: true },
    }))
      out.push(r);
    expect(brief(out)).toEqual([
      [2, "invalid UTF-8"],
      [4, { t: "2024-01-15T12:02:00Z", amount: "20", note: "b" }],
    ]);
  });

  it("a quoted field past maxRecordBytes is one MALFORMED record, cut; its lines are read on to its closing quote, never as records", async () => {
    const long = Array.from(
      { length: 30 },
      (_, i) => `line ${i} of a long field padding padding, 2024-01-15T12:09:00Z,99`,
    ).join("\n");
    const text = `t,amount,note\n2024-01-15T12:01:00Z,10,"${long}"\n2024-01-15T12:02:00Z,20,after\n`;
    const records = await read(text, { maxRecordBytes: 1024 });
    expect(records.map((r) => [r.line, r.fields ?? r.parseError])).toEqual([
      [2, "longer than 1024 bytes (a quoted field spanning lines 2-31)"],
      [32, { t: "2024-01-15T12:02:00Z", amount: "20", note: "after" }],
    ]);
    expect(records[0]!.raw).toBe(`2024-01-15T12:01:00Z,10,"${long}`.slice(0, 1024));
    const never = await read(`t,amount,note\n2024-01-15T12:01:00Z,10,"${long}\n`, { maxRecordBytes: 1024 });
    expect(never.map((r) => [r.line, r.parseError, r.raw.length])).toEqual([
      [2, "a quoted field is not closed at the end of the input", 1024],
    ]);
  });

  it("comment lines and trim", async () => {
    const text = "# exported 2024-01-15\nt , amount\n# a note\n 2024-01-15T12:01:00Z , 10 \n";
    expect(brief(await read(text, {}, { comment: "#", trim: true }))).toEqual([
      [4, { t: "2024-01-15T12:01:00Z", amount: "10" }],
    ]);
  });
});
