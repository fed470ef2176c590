import { describe, expect, it } from "vitest";
import { groupKeyOf } from "../../src/core/keys.js";
import { canonicalJson, jsonFields } from "../../src/ingest/jsonRecords.js";
import { parse } from "lossless-json";

/** The field text of `k` in a JSON line (or its parse error). */
function field(line: string): string | null | { error: string } {
  const r = jsonFields(line);
  return "error" in r ? r : r.fields.k!;
}

describe("a nested JSON value (object or array) as field text", () => {
  it("is one text whatever order the object's members were written in", () => {
    expect(field('{"k":{"b":2,"a":1}}')).toBe('{"a":1,"b":2}');
    expect(field('{"k":{"a":1,"b":2}}')).toBe('{"a":1,"b":2}');
    expect(field('{"k": { "b" : 2 , "a" : 1 } }')).toBe('{"a":1,"b":2}');
  });

  it("writes numbers in their canonical decimal form, exactly, at any depth", () => {
    expect(field('{"k":{"a":1.0,"b":[1e2,-0.0,0.10]}}')).toBe('{"a":1,"b":[100,0,0.1]}');
    expect(field('{"k":[12345678901234567890123.4500]}')).toBe("[12345678901234567890123.45]");
    expect(field('{"k":[1e5000]}')).toBe("[1e5000]");
  });

  it("keeps an array's order: [2,1] and [1,2] are two values", () => {
    expect(field('{"k":[2,1]}')).toBe("[2,1]");
    expect(field('{"k":[1,2]}')).toBe("[1,2]");
  });

  it("sorts member names by UTF-16 code units (RFC 8785's order) and escapes strings as JSON", () => {
    expect(field('{"k":{"b":1,"B":2,"a":3,"é":4,"":5}}')).toBe('{"":5,"B":2,"a":3,"b":1,"é":4}');
    expect(field('{"k":{"s":"x\\"y\\n","n":null,"t":true,"e":{},"l":[]}}')).toBe(
      '{"e":{},"l":[],"n":null,"s":"x\\"y\\n","t":true}',
    );
  });

  it("makes two records with reordered key objects one group", () => {
    const a = jsonFields('{"k":{"region":"eu","shard":1.0},"v":1}');
    const b = jsonFields('{"v":2,"k":{"shard":1,"region":"eu"}}');
    if ("error" in a || "error" in b) throw new Error("parse failed");
    expect(groupKeyOf(a.fields, ["k"], a.numbers)).toBe('{"region":"eu","shard":1}');
    expect(groupKeyOf(b.fields, ["k"], b.numbers)).toBe('{"region":"eu","shard":1}');
    expect(groupKeyOf(a.fields, ["k", "v"], a.numbers)).toBe('["{\\"region\\":\\"eu\\",\\"shard\\":1}","1"]');
  });

  it("refuses a nested object that names a member twice, as at the top level", () => {
    expect(field('{"k":{"a":1,"a":2}}')).toEqual({ error: expect.stringMatching(/^invalid JSON: Duplicate key 'a'/) });
  });

  it("canonicalJson of a parsed value", () => {
    expect(canonicalJson(parse('{"z":[{"y":1.50,"x":"1.50"}],"a":false}'))).toBe(
      '{"a":false,"z":[{"x":"1.50","y":1.5}]}',
    );
  });
});
