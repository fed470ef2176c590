import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { RawRecord } from "../../src/core/admission.js";
import { DEFAULT_CSV_DIALECT, type CsvDialect, type RequiredColumn } from "../../src/ingest/csvRecords.js";
import { SourceRefused } from "../../src/ingest/errors.js";
import { readRecords, type ReadOptions } from "../../src/ingest/readers.js";

const req = (...columns: string[]): RequiredColumn[] => columns.map((column) => ({ column, configField: column === "event_time" ? "fields.eventTime" : "fields.value" }));

async function read(text: string, opts: ReadOptions = {}, csv: Partial<CsvDialect> = {}): Promise<RawRecord[]> {
  const out: RawRecord[] = [];
  for await (const r of readRecords(Readable.from([Buffer.from(text, "utf8")]), "csv", { ...opts, csv: { ...DEFAULT_CSV_DIALECT, ...csv } })) out.push(r);
  return out;
}
const brief = (records: RawRecord[]) => records.map((r) => [r.line, r.fields ?? r.parseError]);

describe("CSV header: padding columns, duplicates, the columns a pipeline reads", () => {
  it("a spreadsheet export's empty header names are padding: its rows are read, empty padding values ignored (CRLF)", async () => {
    const records = await read("event_time,amount,,\r\n2024-01-15T12:01:00Z,10,,\r\n2024-01-15T12:02:00Z,5\r\n", { required: req("event_time", "amount") });
    expect(brief(records)).toEqual([
      [2, { event_time: "2024-01-15T12:01:00Z", amount: "10" }],
      [3, { event_time: "2024-01-15T12:02:00Z", amount: "5" }],
    ]);
  });

  it("a value in an unnamed column makes the record MALFORMED: it must not vanish in silence", async () => {
    expect(brief(await read("event_time,amount,\n2024-01-15T12:01:00Z,10,oops\n"))).toEqual([[2, "a value in column 3, which the header leaves unnamed"]]);
  });

  it("a header naming a real column twice is refused by name (also case-insensitively when headers are matched so)", async () => {
    await expect(read("event_time,amount,amount\n")).rejects.toThrow(new SourceRefused('CSV header (line 1) names column "amount" twice'));
    await expect(read("event_time,Amount,AMOUNT\n", {}, { headerCase: "insensitive" })).rejects.toThrow('CSV header (line 1) names column "AMOUNT" twice');
  });

  it("a header that does not name the configured columns is refused before any row, naming the missing and the present ones", async () => {
    await expect(read("Event_Time,Amount\n2024-01-15T12:01:00Z,10\n", { required: req("event_time", "amount") })).rejects.toThrow(
      'CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime), "amount" (fields.value); it names: "Event_Time", "Amount"; they differ only in case: set source.csv.headerCase: insensitive',
    );
    await expect(read("time,amount\n", { required: req("event_time", "amount") })).rejects.toThrow(
      'CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime); it names: "time", "amount"',
    );
  });

  it("headerCase: insensitive reads Event_Time as event_time", async () => {
    const records = await read("Event_Time,AMOUNT,Note\n2024-01-15T12:01:00Z,10,x\n", { required: req("event_time", "amount") }, { headerCase: "insensitive" });
    expect(brief(records)).toEqual([[2, { event_time: "2024-01-15T12:01:00Z", amount: "10", Note: "x" }]]);
  });
});

describe("CSV dialects (source.csv)", () => {
  it("delimiter, quote and escape map onto csv-parse's; a BOM is removed", async () => {
    const records = await read("\uFEFFt;amount;note\n2024-01-15T12:01:00Z;1,5;'it\\'s; fine'\n", {}, { delimiter: ";", quote: "'", escape: "\\" });
    expect(brief(records)).toEqual([[2, { t: "2024-01-15T12:01:00Z", amount: "1,5", note: "it's; fine" }]]);
  });

  it("a stray quote inside an unquoted field is MALFORMED by default and read as text with relaxQuotes", async () => {
    const text = 't,amount,note\n2024-01-15T12:01:00Z,10,5" screen\n';
    expect((await read(text))[0]!.parseError).toMatch(/^invalid CSV: /);
    expect(brief(await read(text, {}, { relaxQuotes: true }))).toEqual([[2, { t: "2024-01-15T12:01:00Z", amount: "10", note: '5" screen' }]]);
  });

  it("quoted fields spanning lines are one record with multiline; without it each line is MALFORMED", async () => {
    const text = 't,amount,note\n2024-01-15T12:01:00Z,10,"two\nlines, one ""field"""\n2024-01-15T12:02:00Z,20,plain\n';
    expect(brief(await read(text, {}, { multiline: true }))).toEqual([
      [2, { t: "2024-01-15T12:01:00Z", amount: "10", note: 'two\nlines, one "field"' }],
      [4, { t: "2024-01-15T12:02:00Z", amount: "20", note: "plain" }],
    ]);
    expect(brief(await read(text)).map(([line, v]) => [line, typeof v === "string" ? "malformed" : "record"])).toEqual([
      [2, "malformed"],
      [3, "malformed"],
      [4, "record"],
    ]);
  });

  it("invalid UTF-8 on a continuation line makes the multi-line record MALFORMED", async () => {
    const bytes = Buffer.concat([Buffer.from('t,amount,note\n2024-01-15T12:01:00Z,10,"a\n'), Buffer.from([0xff]), Buffer.from('"\n2024-01-15T12:02:00Z,20,b\n')]);
    const out: RawRecord[] = [];
    for await (const r of readRecords(Readable.from([bytes]), "csv", { csv: { ...DEFAULT_CSV_DIALECT, multiline: true } })) out.push(r);
    expect(brief(out)).toEqual([
      [2, "invalid UTF-8"],
      [4, { t: "2024-01-15T12:02:00Z", amount: "20", note: "b" }],
    ]);
  });

  it("a quoted field that never closes is bounded by maxRecordBytes: MALFORMED, cut, and the lines after it are read again", async () => {
    const long = Array.from({ length: 30 }, (_, i) => `line ${i} of an unclosed field padding padding`).join("\n");
    const text = `t,amount,note\n2024-01-15T12:01:00Z,10,"${long}\n`;
    const records = await read(text, { maxRecordBytes: 1024 }, { multiline: true });
    expect(records[0]!.parseError).toBe("longer than 1024 bytes");
    expect(records[0]!.raw.length).toBeLessThanOrEqual(1024);
    expect(records.length).toBeGreaterThan(1);
  });

  it("comment lines and trim", async () => {
    const text = "# exported 2024-01-15\nt , amount\n# a note\n 2024-01-15T12:01:00Z , 10 \n";
    expect(brief(await read(text, {}, { comment: "#", trim: true }))).toEqual([[4, { t: "2024-01-15T12:01:00Z", amount: "10" }]]);
  });
});
