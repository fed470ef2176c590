import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { RawRecord } from "../../src/core/admission.js";
import { readRecords, type SourceFormat } from "../../src/ingest/readers.js";

async function read(bytes: Buffer | string, format: SourceFormat): Promise<RawRecord[]> {
  const out: RawRecord[] = [];
  for await (const r of readRecords(
    Readable.from([typeof bytes === "string" ? Buffer.from(bytes, "utf8") : bytes]),
    format,
  ))
    out.push(r);
  return out;
}

describe("readRecords csv", () => {
  it("strips a BOM, handles CRLF, and maps fields by header name", async () => {
    const text = "\uFEFFid,ts,amount\r\n1,2024-05-01T12:00:00Z,9.75\r\n2,2024-05-01T12:01:00Z,-9.3\r\n";
    expect(await read(text, "csv")).toEqual([
      { line: 2, raw: "1,2024-05-01T12:00:00Z,9.75", fields: { id: "1", ts: "2024-05-01T12:00:00Z", amount: "9.75" } },
      { line: 3, raw: "2,2024-05-01T12:01:00Z,-9.3", fields: { id: "2", ts: "2024-05-01T12:01:00Z", amount: "-9.3" } },
    ]);
  });

  it("reads a quoted field containing a comma and escaped quotes", async () => {
    const records = await read('name,amount\n"Smith, John",1\n"say ""hi""",2\n', "csv");
    expect(records.map((r) => r.fields)).toEqual([
      { name: "Smith, John", amount: "1" },
      { name: 'say "hi"', amount: "2" },
    ]);
  });

  it("turns a wrong field count into a malformed record and keeps reading", async () => {
    expect(await read("a,b,c\n1,2\n1,2,3,4\n1,2,3\n", "csv")).toEqual([
      { line: 2, raw: "1,2", fields: null, parseError: "expected 3 fields, got 2" },
      { line: 3, raw: "1,2,3,4", fields: null, parseError: "expected 3 fields, got 4" },
      { line: 4, raw: "1,2,3", fields: { a: "1", b: "2", c: "3" } },
    ]);
  });

  it("skips blank lines but keeps physical line numbers", async () => {
    expect(await read("a,b\n\n1,2\n   \r\n3,4\n\n", "csv")).toEqual([
      { line: 3, raw: "1,2", fields: { a: "1", b: "2" } },
      { line: 5, raw: "3,4", fields: { a: "3", b: "4" } },
    ]);
  });

  it("reads an empty field as null", async () => {
    expect((await read("a,b\n,2\n", "csv"))[0]!.fields).toEqual({ a: null, b: "2" });
  });

  it("makes a line with invalid UTF-8 malformed", async () => {
    const bytes = Buffer.concat([Buffer.from("a,b\n1,"), Buffer.from([0xff, 0xfe]), Buffer.from("\n3,4\n")]);
    const records = await read(bytes, "csv");
    expect(records.map((r) => [r.line, r.fields, r.parseError])).toEqual([
      [2, null, "invalid UTF-8"],
      [3, { a: "3", b: "4" }, undefined],
    ]);
  });

  it("keeps valid multi-byte UTF-8 split across chunks", async () => {
    const bytes = Buffer.from("city,n\nZürich,1\n", "utf8");
    const cut = bytes.indexOf(0xc3) + 1; // inside the two-byte ü
    const out: RawRecord[] = [];
    for await (const r of readRecords(Readable.from([bytes.subarray(0, cut), bytes.subarray(cut)]), "csv")) out.push(r);
    expect(out).toEqual([{ line: 2, raw: "Zürich,1", fields: { city: "Zürich", n: "1" } }]);
  });

  it("refuses a header that names a column twice", async () => {
    await expect(read("a,a\n1,2\n", "csv")).rejects.toThrow('CSV header (line 1) names column "a" twice');
  });

  it("refuses a header whose names are duplicates after trimming", async () => {
    await expect(read("a, a\n1,2\n", "csv")).rejects.toThrow('CSV header (line 1) names column "a" twice');
  });
});

describe("readRecords jsonl", () => {
  it("reads objects, keeping numbers as their exact text", async () => {
    const text =
      '{"ts":"2024-05-01T12:00:00Z","amount":0.1}\n{"ts":"2024-05-01T12:01:00Z","amount":1e400,"big":12345678901234567890}\n';
    expect((await read(text, "jsonl")).map((r) => r.fields)).toEqual([
      { ts: "2024-05-01T12:00:00Z", amount: "0.1" },
      { ts: "2024-05-01T12:01:00Z", amount: "1e400", big: "12345678901234567890" },
    ]);
  });

  it("keeps null as null and an empty string as an empty string; booleans and nested values become text", async () => {
    const [r] = await read('{"a":null,"b":"","c":true,"d":{"x":"y"},"e":["y",null]}\n', "jsonl");
    expect(r!.fields).toEqual({ a: null, b: "", c: "true", d: '{"x":"y"}', e: '["y",null]' });
    expect(r!.numbers).toBeUndefined();
  });

  it("names the fields whose value is a JSON number, not a string holding one", async () => {
    const [r] = await read('{"id":2.0,"store":"7.0","n":-0,"d":{"x":1}}\n', "jsonl");
    expect([r!.fields, r!.numbers]).toEqual([{ id: "2.0", store: "7.0", n: "-0", d: '{"x":1}' }, ["id", "n"]]);
  });

  it("writes nested values as canonical JSON: numbers exact in canonical form (never through a double), members sorted", async () => {
    const [r] = await read('{"d":{"y":12345678901234567890.10,"x":1.50},"e":[1,"y"]}\n', "jsonl");
    expect(r!.fields).toEqual({ d: '{"x":1.5,"y":12345678901234567890.1}', e: '[1,"y"]' });
  });

  it("makes invalid JSON and non-objects malformed and keeps reading", async () => {
    const records = await read('{"a":1}\n{"a":\n[1,2]\n"text"\ntrue\nnull\n{"a":2}\n', "jsonl");
    expect(
      records.map((r) => [r.line, r.fields, r.parseError?.startsWith("invalid JSON") ? "invalid JSON…" : r.parseError]),
    ).toEqual([
      [1, { a: "1" }, undefined],
      [2, null, "invalid JSON…"],
      [3, null, "expected a JSON object"],
      [4, null, "expected a JSON object"],
      [5, null, "expected a JSON object"],
      [6, null, "expected a JSON object"],
      [7, { a: "2" }, undefined],
    ]);
    expect(records[1]!.raw).toBe('{"a":');
  });

  it("makes a bare JSON number line malformed", async () => {
    expect(await read("42\n", "jsonl")).toEqual([
      { line: 1, raw: "42", fields: null, parseError: "expected a JSON object" },
    ]);
  });

  it("strips a BOM, handles CRLF and skips blank lines", async () => {
    expect(await read('\uFEFF{"a":"x"}\r\n\r\n{"a":"y"}\r\n', "jsonl")).toEqual([
      { line: 1, raw: '{"a":"x"}', fields: { a: "x" } },
      { line: 3, raw: '{"a":"y"}', fields: { a: "y" } },
    ]);
  });

  it("makes a line with invalid UTF-8 malformed", async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"a":"'),
      Buffer.from([0xff, 0xc3, 0x28]),
      Buffer.from('"}\n{"a":"ok"}\n'),
    ]);
    const records = await read(bytes, "jsonl");
    expect(records.map((r) => [r.line, r.fields, r.parseError])).toEqual([
      [1, null, "invalid UTF-8"],
      [2, { a: "ok" }, undefined],
    ]);
  });

  it("makes a line with a NUL character malformed", async () => {
    const records = await read('{"a":"x\u0000"}\n', "jsonl");
    expect(records.map((r) => [r.fields, r.parseError])).toEqual([[null, "contains a NUL character"]]);
  });
});
