/**
 * Hostile and broken input, landed for real into PostgreSQL through the real
 * paths: `landStream` (stdin / request-body path), `landFile` (landing-folder
 * path, real bytes on disk) and the HTTP route `POST /pipelines/:name/events`.
 *
 * One `it` per kind, each with its exact outcome (status, reason, detail). After
 * every kind the ledger balances: in `straggler.ledger` accepted + quarantined =
 * landed, and `landed` (and reconcile's landed-by-source count) equals the
 * number of record lines sent, counted independently of the reader here.
 *
 * Project rule (README "Files", src/ingest/readers.ts): blank lines (empty or
 * whitespace only) carry no record and are skipped — they are not landed and
 * not counted. Line numbers stay physical, so the records after a blank line
 * keep their line in the source. A CSV header line is not a record either.
 */
import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipelineSchema } from "../../src/config/pipelineSchema.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { createApp } from "../../src/app.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { MAX_RECORD_BYTES } from "../../src/ingest/readers.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { BASE_FIELDS, csv, ev, HEADER, LANDED, landingCases, lines, TS } from "../helpers/landingCases.js";
import { pipeline } from "../helpers/fixtures.js";

const { getDb, DIR, pipelineName, basePipeline, runCase } = landingCases("hostile");

const NOT_JSON_OBJECT = "expected a JSON object";

describe("hostile and broken input: records", () => {
  it("malformed JSON: each bad line is MALFORMED with the parser's reason, the rest lands", async () => {
    await runCase({
      batches: [
        lines(
          ev("a"),
          '{"id":"b","ts":"2024-05-01T10:00:00Z","amount":',
          "not json at all",
          "{'id':'c'}",
          '{"id":"d","amount":1,}',
          '{"id":"e"}{"id":"f"}',
          ev("g"),
        ),
      ],
      rows: [
        { line: 1, eventId: "a" },
        { line: 2, reason: "MALFORMED", detail: "invalid JSON: Object value expected after ':' at position 47" },
        { line: 3, reason: "MALFORMED", detail: "invalid JSON: JSON value expected but got 'n' at position 0" },
        { line: 4, reason: "MALFORMED", detail: "invalid JSON: Quoted object key expected but got ''' at position 1" },
        { line: 5, reason: "MALFORMED", detail: "invalid JSON: Quoted object key expected but got '}' at position 21" },
        { line: 6, reason: "MALFORMED", detail: "invalid JSON: Expected end of input but got '{' at position 10" },
        { line: 7, eventId: "g" },
      ],
    });
  });

  it("JSON that is not an object (array, string, number, null, boolean) is MALFORMED", async () => {
    await runCase({
      batches: [lines("[1,2]", '"text"', "42", "null", "true", ev("a"))],
      rows: [
        { line: 1, reason: "MALFORMED", detail: NOT_JSON_OBJECT },
        { line: 2, reason: "MALFORMED", detail: NOT_JSON_OBJECT },
        { line: 3, reason: "MALFORMED", detail: NOT_JSON_OBJECT },
        { line: 4, reason: "MALFORMED", detail: NOT_JSON_OBJECT },
        { line: 5, reason: "MALFORMED", detail: NOT_JSON_OBJECT },
        { line: 6 },
      ],
    });
  });

  it("a JSON object naming a field twice is ambiguous: MALFORMED", async () => {
    await runCase({
      batches: [lines('{"id":"a","ts":"2024-05-01T10:00:00Z","amount":1,"amount":2}')],
      rows: [
        { line: 1, reason: "MALFORMED", detail: "invalid JSON: Duplicate key 'amount' encountered at position 50" },
      ],
    });
  });

  it("deeply nested JSON is refused by depth, deterministically (never by stack exhaustion)", async () => {
    const nested = (depth: number) =>
      `{"id":"n${depth}","ts":"${TS}","amount":1,"key":"k","x":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
    await runCase({
      // Depth counts the record object itself: 1000 levels are a record, 1001 are not; 5000 is
      // where a recursive parser or serialiser may or may not overflow the stack; 100000 always would.
      batches: [lines(nested(1000), nested(1001), nested(5000), nested(100_000), ev("after"))],
      rows: [
        { line: 1, eventId: "n1000" },
        { line: 2, reason: "MALFORMED", detail: "invalid JSON: nested deeper than 1000 levels" },
        { line: 3, reason: "MALFORMED", detail: "invalid JSON: nested deeper than 1000 levels" },
        { line: 4, reason: "MALFORMED", detail: "invalid JSON: nested deeper than 1000 levels" },
        { line: 5, eventId: "after" },
      ],
    });
  });

  it("CSV rows with too many fields are MALFORMED; an extra empty field (a trailing delimiter) carries no value and is ignored", async () => {
    await runCase({
      format: "csv",
      batches: [csv(`a,${TS},1,k`, `b,${TS},1,k,extra`, `c,${TS},1,k,`, `d,${TS},1,"k,still one field"`)],
      rows: [
        { line: 2 },
        { line: 3, reason: "MALFORMED", detail: "expected 4 fields, got 5" },
        { line: 4, key: "k" },
        { line: 5, key: "k,still one field" },
      ],
    });
  });

  it("CSV rows with too few fields are MALFORMED", async () => {
    await runCase({
      format: "csv",
      batches: [csv(`a,${TS},1`, "justone", `b,${TS},1,k`)],
      rows: [
        { line: 2, reason: "MALFORMED", detail: "expected 4 fields, got 3" },
        { line: 3, reason: "MALFORMED", detail: "expected 4 fields, got 1" },
        { line: 4 },
      ],
    });
  });

  it("a quoted field holding a line break is one record (RFC 4180): its second line is never an event; with multiline: false the record is MALFORMED whole", async () => {
    const batches = [csv(`a,${TS},1,"multi`, `line"`, `b,${TS},1,"say ""hi"""`)];
    await runCase({
      format: "csv",
      batches,
      records: 2,
      rows: [
        { line: 2, key: "multi\nline", raw: `a,${TS},1,"multi\nline"` },
        { line: 4, key: 'say "hi"' },
      ],
    });
    await runCase({
      format: "csv",
      over: { source: { format: "csv", csv: { multiline: false } } },
      batches,
      records: 2,
      rows: [
        {
          line: 2,
          reason: "MALFORMED",
          detail: "a quoted field spans lines (source.csv.multiline: false)",
          raw: `a,${TS},1,"multi\nline"`,
        },
        { line: 4, key: 'say "hi"' },
      ],
    });
  });

  it("wrong types for the event time (object, array, number, boolean) are PARSE_FAIL", async () => {
    await runCase({
      batches: [
        lines(
          ev("o", { ts: { at: TS } }),
          ev("a", { ts: [TS] }),
          ev("n", { ts: 1714557600000 }),
          ev("b", { ts: true }),
        ),
      ],
      rows: [
        {
          line: 1,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": not an ISO 8601 timestamp: "{\\"at\\":\\"2024-05-01T10:00:00Z\\"}"',
        },
        {
          line: 2,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": not an ISO 8601 timestamp: "[\\"2024-05-01T10:00:00Z\\"]"',
        },
        { line: 3, reason: "PARSE_FAIL", detail: 'event time "ts": not an ISO 8601 timestamp: "1714557600000"' },
        { line: 4, reason: "PARSE_FAIL", detail: 'event time "ts": not an ISO 8601 timestamp: "true"' },
      ],
    });
  });

  it("wrong types for the value (boolean, object, array) are INVALID_VALUE; a numeric string is a value", async () => {
    await runCase({
      batches: [
        lines(
          ev("t", { amount: true }),
          ev("f", { amount: false }),
          ev("o", { amount: { v: 1 } }),
          ev("a", { amount: [1] }),
          ev("s", { amount: " 12.50 " }),
        ),
      ],
      rows: [
        { line: 1, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "true"' },
        { line: 2, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "false"' },
        { line: 3, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "{\\"v\\":1}"' },
        { line: 4, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "[1]"' },
        { line: 5, value: "12.50" },
      ],
      windows: [["k", 1, "12.50"]],
    });
  });

  it("a missing event time (absent, null, empty) is NULL_TS; whitespace only is PARSE_FAIL", async () => {
    // Design: whitespace is text that is not a timestamp, not an absent field.
    await runCase({
      batches: [lines(ev("a", { ts: undefined }), ev("n", { ts: null }), ev("e", { ts: "" }), ev("w", { ts: "   " }))],
      rows: [
        { line: 1, reason: "NULL_TS", detail: 'no event time in field "ts"' },
        { line: 2, reason: "NULL_TS", detail: 'no event time in field "ts"' },
        { line: 3, reason: "NULL_TS", detail: 'no event time in field "ts"' },
        { line: 4, reason: "PARSE_FAIL", detail: 'event time "ts": not an ISO 8601 timestamp: ""' },
      ],
    });
  });

  it("a missing value (absent, null, empty) is INVALID_VALUE", async () => {
    await runCase({
      batches: [lines(ev("a", { amount: undefined }), ev("n", { amount: null }), ev("e", { amount: "" }))],
      rows: [
        { line: 1, reason: "INVALID_VALUE", detail: 'no value in field "amount"' },
        { line: 2, reason: "INVALID_VALUE", detail: 'no value in field "amount"' },
        { line: 3, reason: "INVALID_VALUE", detail: 'no value in field "amount"' },
      ],
    });
  });

  it("a missing event id (absent, null, empty) is MALFORMED; a number or object id is its JSON text", async () => {
    await runCase({
      batches: [lines(ev(undefined), ev(null), ev(""), ev(42), ev({ a: 1 }))],
      rows: [
        { line: 1, reason: "MALFORMED", detail: 'missing event id field "id"' },
        { line: 2, reason: "MALFORMED", detail: 'missing event id field "id"' },
        { line: 3, reason: "MALFORMED", detail: 'missing event id field "id"' },
        { line: 4, eventId: "42" },
        { line: 5, eventId: '{"a":1}' },
      ],
    });
  });

  it("blank lines carry no record: skipped, not landed, later lines keep their physical number", async () => {
    await runCase({
      batches: [["", ev("a"), "", "   ", "\t", ev("b"), " \r", ev("c"), ""].join("\n")],
      rows: [
        { line: 2, eventId: "a" },
        { line: 6, eventId: "b" },
        { line: 8, eventId: "c" },
      ],
    });
  });

  it("an input of blank lines only (and an empty one) lands nothing and still counts as landed", async () => {
    const { pool } = await getDb();
    const p = await runCase({ batches: ["", "\n\n  \n\r\n"], rows: [] });
    const sources = await pool.query("SELECT rows FROM straggler.landed_sources WHERE pipeline = $1", [p.name]);
    expect(sources.rows).toEqual([{ rows: 0 }, { rows: 0 }]);
  });

  it("a UTF-8 BOM starting a JSON lines file is removed; one in the middle of the file is not JSON", async () => {
    await runCase({
      via: "file",
      batches: ["\uFEFF" + lines(ev("a"), "\uFEFF" + ev("b"))],
      rows: [
        { line: 1, eventId: "a", raw: ev("a") },
        { line: 2, reason: "MALFORMED", detail: "invalid JSON: JSON value expected but got '\uFEFF' at position 0" },
      ],
    });
  });

  it("a UTF-8 BOM before a CSV header is removed: the first column is found by name", async () => {
    await runCase({
      format: "csv",
      via: "file",
      batches: ["\uFEFF" + csv(`a,${TS},1,k`)],
      rows: [{ line: 2, eventId: "a" }],
    });
  });

  it("CRLF and lone CR line endings: no \\r reaches a field or the raw text", async () => {
    await runCase({
      format: "csv",
      via: "file",
      batches: [`${HEADER}\r\na,${TS},1.5,k\r\n\r\nb,${TS},2,k\rc,${TS},3,k`],
      rows: [
        { line: 2, value: "1.5", key: "k", raw: `a,${TS},1.5,k` },
        { line: 4, value: "2", raw: `b,${TS},2,k` },
        { line: 5, value: "3", raw: `c,${TS},3,k` },
      ],
      windows: [["k", 3, "6.5"]],
    });
  });

  it("CRLF in JSON lines", async () => {
    await runCase({
      batches: [`${ev("a")}\r\n${ev("b", { key: "x" })}\r\n`],
      rows: [
        { line: 1, raw: ev("a") },
        { line: 2, key: "x", raw: ev("b", { key: "x" }) },
      ],
    });
  });

  it("invalid UTF-8 (bad continuation, 0xFF, overlong, surrogate, truncated sequence) is MALFORMED", async () => {
    const bad = (bytes: number[]) =>
      Buffer.concat([
        Buffer.from(`{"id":"x","ts":"${TS}","amount":1,"key":"`),
        Buffer.from(bytes),
        Buffer.from('"}\n'),
      ]);
    await runCase({
      via: "file",
      batches: [
        Buffer.concat([
          bad([0xc3, 0x28]),
          bad([0xff]),
          bad([0xc0, 0xaf]),
          bad([0xed, 0xa0, 0x80]),
          bad([0xf0, 0x9f, 0x98]),
          Buffer.from(ev("ok") + "\n"),
        ]),
      ],
      rows: [
        {
          line: 1,
          reason: "MALFORMED",
          detail: "invalid UTF-8",
          raw: `{"id":"x","ts":"${TS}","amount":1,"key":"\uFFFD("}`,
        },
        { line: 2, reason: "MALFORMED", detail: "invalid UTF-8" },
        { line: 3, reason: "MALFORMED", detail: "invalid UTF-8" },
        { line: 4, reason: "MALFORMED", detail: "invalid UTF-8" },
        { line: 5, reason: "MALFORMED", detail: "invalid UTF-8" },
        { line: 6, eventId: "ok" },
      ],
    });
  });

  it("a multi-byte character split across read chunks is decoded whole, not as invalid UTF-8", async () => {
    const bytes = Buffer.from(ev("crab", { key: "🦀" }) + "\n", "utf8");
    const cut = bytes.indexOf(Buffer.from("🦀")) + 2; // inside the 4-byte sequence
    await runCase({
      batches: [[bytes.subarray(0, cut), bytes.subarray(cut)]],
      rows: [{ line: 1, key: "🦀" }],
      windows: [["🦀", 1, "1"]],
    });
  });

  it("a NUL byte makes the line MALFORMED; PostgreSQL text cannot hold NUL, so raw keeps it as the 6 characters \\u0000", async () => {
    const withNul = `{"id":"z","ts":"${TS}","amount":1,"key":"a\u0000b"}`;
    await runCase({
      via: "file",
      batches: [lines(withNul, ev("ok"))],
      rows: [
        { line: 1, reason: "MALFORMED", detail: "contains a NUL character", raw: withNul.replace("\u0000", "\\u0000") },
        { line: 2, eventId: "ok" },
      ],
    });
  });

  it("JSON escapes that put a NUL or a lone surrogate into a key or id are MALFORMED; a valid surrogate pair is a character", async () => {
    // "\u0000" and "\ud800" are valid JSON escapes, but neither a PostgreSQL text value nor
    // Unicode text: stored, they would silently become other keys ("\\u0000", U+FFFD). Only
    // the fields stored as text (group key, event id) are checked; elsewhere such text fails
    // to parse as a time or value, or is never stored apart from the raw line (which keeps the escape).
    await runCase({
      batches: [
        lines(
          String.raw`{"id":"n","ts":"${TS}","amount":1,"key":"a\u0000b"}`,
          String.raw`{"id":"s","ts":"${TS}","amount":1,"key":"\ud800x"}`,
          String.raw`{"id":"p","ts":"${TS}","amount":1,"key":"\ud83e\udd80"}`,
          String.raw`{"id":"i\u0000","ts":"${TS}","amount":1,"key":"k"}`,
          String.raw`{"id":"q","ts":"${TS}","amount":1,"key":"k","note":"\u0000\udc00"}`,
        ),
      ],
      rows: [
        { line: 1, reason: "MALFORMED", detail: "group key contains a NUL character", key: "" },
        { line: 2, reason: "MALFORMED", detail: "group key is not valid Unicode (lone surrogate)", key: "" },
        { line: 3, key: "🦀" },
        {
          line: 4,
          reason: "MALFORMED",
          detail: "event id contains a NUL character",
          eventId: expect.stringMatching(/^hostile:[0-9a-f-]{36}:4$/) as unknown as string,
        },
        { line: 5, key: "k", eventId: "q" },
      ],
      windows: [
        ["🦀", 1, "1"],
        ["k", 1, "1"],
      ],
    });
  });

  it("NaN and Infinity: bare ones are not JSON (MALFORMED), as text they are not decimals (INVALID_VALUE)", async () => {
    await runCase({
      batches: [
        lines(
          `{"id":"a","ts":"${TS}","amount":NaN}`,
          `{"id":"b","ts":"${TS}","amount":Infinity}`,
          ev("c", { amount: "NaN" }),
          ev("d", { amount: "Infinity" }),
          ev("e", { amount: "-Infinity" }),
          ev("f", { amount: "inf" }),
        ),
      ],
      rows: [
        { line: 1, reason: "MALFORMED", detail: "invalid JSON: Object value expected after ':' at position 47" },
        { line: 2, reason: "MALFORMED", detail: "invalid JSON: Object value expected after ':' at position 47" },
        { line: 3, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "NaN"' },
        { line: 4, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "Infinity"' },
        { line: 5, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "-Infinity"' },
        { line: 6, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "inf"' },
      ],
    });
  });

  it("NaN in a CSV value is INVALID_VALUE", async () => {
    await runCase({
      format: "csv",
      batches: [csv(`a,${TS},NaN,k`, `b,${TS},Infinity,k`, `c,${TS},0x10,k`, `d,${TS},"1,5",k`)],
      rows: [
        { line: 2, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "NaN"' },
        { line: 3, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "Infinity"' },
        { line: 4, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "0x10"' },
        { line: 5, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "1,5"' },
      ],
    });
  });

  it("1e400 is within numeric's range: accepted and stored and summed exactly under a wider admission.maxAbsValue", async () => {
    const big = "1" + "0".repeat(400);
    await runCase({
      over: { admission: { maxAbsValue: "1e131000" } },
      batches: [
        lines(
          `{"id":"a","ts":"${TS}","amount":1e400,"key":"k"}`,
          `{"id":"b","ts":"${TS}","amount":-1E+400,"key":"k"}`,
          `{"id":"c","ts":"${TS}","amount":1e400,"key":"k"}`,
        ),
      ],
      rows: [
        { line: 1, value: big },
        { line: 2, value: "-" + big },
        { line: 3, value: big },
      ],
      windows: [["k", 3, big]],
    });
  });

  it("numbers beyond numeric's range (1e200000, 1e-200000, 131073 integer digits) are INVALID_VALUE", async () => {
    await runCase({
      batches: [
        lines(
          `{"id":"a","ts":"${TS}","amount":1e200000}`,
          `{"id":"b","ts":"${TS}","amount":1e-200000}`,
          `{"id":"c","ts":"${TS}","amount":${"9".repeat(131073)}}`,
        ),
      ],
      rows: [
        { line: 1, reason: "INVALID_VALUE", detail: `value "amount": outside PostgreSQL's numeric range: 1e200000` },
        { line: 2, reason: "INVALID_VALUE", detail: `value "amount": outside PostgreSQL's numeric range: 1e-200000` },
        {
          line: 3,
          reason: "INVALID_VALUE",
          detail: `value "amount": outside PostgreSQL's numeric range: ${"9".repeat(40)}`,
        },
      ],
    });
  });

  it("the limits: |value| up to admission.maxAbsValue's ceiling 1e131000 and 16383 fraction digits are accepted when configured, beyond is not", async () => {
    // 1e131071 fits numeric but two of them do not sum: the ceiling leaves room for any sum.
    await runCase({
      over: { admission: { maxAbsValue: "1e131000", maxFractionDigits: 16383 } },
      batches: [
        lines(
          `{"id":"a","ts":"${TS}","amount":1e131000}`,
          `{"id":"b","ts":"${TS}","amount":1e131072}`,
          `{"id":"c","ts":"${TS}","amount":1e-16383}`,
          `{"id":"d","ts":"${TS}","amount":1e-16384}`,
          `{"id":"e","ts":"${TS}","amount":-1e131071}`,
        ),
      ],
      rows: [
        { line: 1, value: "1" + "0".repeat(131000) },
        { line: 2, reason: "INVALID_VALUE", detail: `value "amount": outside PostgreSQL's numeric range: 1e131072` },
        { line: 3, value: "0." + "0".repeat(16382) + "1" },
        { line: 4, reason: "INVALID_VALUE", detail: `value "amount": outside PostgreSQL's numeric range: 1e-16384` },
        {
          line: 5,
          reason: "INVALID_VALUE",
          detail: `value "amount": magnitude above admission.maxAbsValue 1e131000: -1e131071`,
        },
      ],
      windows: [[null, 2, "1" + "0".repeat(131000) + "." + "0".repeat(16382) + "1"]], // no key field: the null group
    });
  });

  it("epoch seconds where epoch_ms is configured read as a January 1970 instant: TOO_OLD under minEventTime", async () => {
    // Decision: a 10-digit number is a valid epoch_ms (1970-01-20T20:15:57.600Z); nothing guesses the
    // unit. minEventTime is the guard that catches the mistake.
    await runCase({
      over: { timestamps: { format: "epoch_ms" }, admission: { minEventTime: "2000-01-01T00:00:00Z" } },
      batches: [
        lines(
          ev("s", { ts: 1714557600 }),
          ev("ms", { ts: 1714557600000 }),
          ev("str", { ts: "1714557600000" }),
          ev("neg", { ts: -1 }),
          `{"id":"exp","ts":1.7145576e12,"amount":1,"key":"k"}`,
          ev("sub", { ts: "1714557600000.5" }),
        ),
      ],
      rows: [
        {
          line: 1,
          reason: "TOO_OLD",
          detail: "event time before minEventTime 2000-01-01T00:00:00.000Z",
          eventTime: "1970-01-20T20:15:57.600Z",
        },
        { line: 2, eventTime: "2024-05-01T10:00:00.000Z" },
        { line: 3, eventTime: "2024-05-01T10:00:00.000Z" },
        {
          line: 4,
          reason: "TOO_OLD",
          detail: "event time before minEventTime 2000-01-01T00:00:00.000Z",
          eventTime: "1969-12-31T23:59:59.999Z",
        },
        {
          line: 5,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": not an epoch number: "1.7145576e12"',
          eventTime: null,
        },
        { line: 6, eventTime: "2024-05-01T10:00:00.000500Z" }, // a fraction of a ms is microseconds, kept exactly
      ],
    });
  });

  it("years 0001 and 9999 are accepted; 10000, 0000, instants outside 0001-9999 in UTC and an event whose window would end in 10000 are PARSE_FAIL", async () => {
    await runCase({
      batches: [
        lines(
          ev("y1", { ts: "0001-01-01T00:00:00Z" }),
          ev("y9999", { ts: "9999-12-31T23:59:59.999Z" }),
          ev("y10000", { ts: "10000-01-01T00:00:00Z" }),
          ev("y0", { ts: "0000-12-31T00:00:00Z" }),
          ev("y1east", { ts: "0001-01-01T00:30:00+01:00" }),
          ev("y9999west", { ts: "9999-12-31T23:00:00-05:00" }),
          ev("expanded", { ts: "+002024-05-01T10:00:00Z" }),
        ),
      ],
      rows: [
        { line: 1, eventTime: "0001-01-01T00:00:00.000Z" },
        // Its 1-hour window would end at 10000-01-01T00:00Z, outside the supported instants (README "Timestamps").
        {
          line: 2,
          reason: "PARSE_FAIL",
          eventTime: "9999-12-31T23:59:59.999Z",
          detail:
            "event time 9999-12-31T23:59:59.999Z: its window [9999-12-31T23:00:00.000Z, +010000-01-01T00:00:00.000Z) reaches outside the supported instants (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z)",
        },
        {
          line: 3,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": not an ISO 8601 timestamp: "10000-01-01T00:00:00Z"',
        },
        { line: 4, reason: "PARSE_FAIL", detail: 'event time "ts": field out of range: 0000-12-31T00:00:00Z' },
        { line: 5, reason: "PARSE_FAIL", detail: 'event time "ts": instant outside years 0001-9999' },
        { line: 6, reason: "PARSE_FAIL", detail: 'event time "ts": instant outside years 0001-9999' },
        {
          line: 7,
          reason: "PARSE_FAIL",
          detail:
            'event time "ts": expanded years (+YYYYYY) are not accepted: years are 0001-9999: "+002024-05-01T10:00:00Z"',
        },
      ],
    });
  });

  it("zone-less timestamps without a configured zone are PARSE_FAIL", async () => {
    await runCase({
      batches: [
        lines(
          ev("a", { ts: "2024-05-01T10:00:00" }),
          ev("b", { ts: "2024-05-01 10:00" }),
          ev("c", { ts: "2024-05-01" }),
        ),
      ],
      rows: [
        {
          line: 1,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": timestamp has no zone and the pipeline configures no timeZone',
        },
        {
          line: 2,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": timestamp has no zone and the pipeline configures no timeZone',
        },
        {
          line: 3,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": timestamp has no zone and the pipeline configures no timeZone',
        },
      ],
    });
  });

  it("zone-less timestamps with a configured zone are read in it; an explicit offset wins", async () => {
    await runCase({
      over: { timestamps: { format: "iso8601", timeZone: "Asia/Kathmandu" } },
      batches: [
        lines(
          ev("a", { ts: "2024-05-01T10:00:00" }),
          ev("b", { ts: "2024-05-01 10:00" }),
          ev("c", { ts: "2024-05-01T10:00:00Z" }),
          ev("d", { ts: "0001-01-01T12:00:00" }),
        ),
      ],
      rows: [
        { line: 1, eventTime: "2024-05-01T04:15:00.000Z" },
        { line: 2, eventTime: "2024-05-01T04:15:00.000Z" },
        { line: 3, eventTime: "2024-05-01T10:00:00.000Z" },
        // Before standard time, Kathmandu kept local mean time (+05:41:16).
        { line: 4, eventTime: "0001-01-01T06:18:44.000Z" },
      ],
    });
  });

  it("odd offsets (+05:45, -09:30, +14:00, -12:00, +0545) are exact; +25:00 and +05:60 are PARSE_FAIL", async () => {
    await runCase({
      batches: [
        lines(
          ev("a", { ts: "2024-05-01T10:00:00+05:45" }),
          ev("b", { ts: "2024-05-01T10:00:00-09:30" }),
          ev("c", { ts: "2024-05-01T10:00:00+14:00" }),
          ev("d", { ts: "2024-05-01T10:00:00-12:00" }),
          ev("e", { ts: "2024-05-01T10:00:00+0545" }),
          ev("f", { ts: "2024-05-01T10:00:00+25:00" }),
          ev("g", { ts: "2024-05-01T10:00:00+05:60" }),
          ev("h", { ts: "2024-05-01T10:00:00+5:45" }),
        ),
      ],
      rows: [
        { line: 1, eventTime: "2024-05-01T04:15:00.000Z" },
        { line: 2, eventTime: "2024-05-01T19:30:00.000Z" },
        { line: 3, eventTime: "2024-04-30T20:00:00.000Z" },
        { line: 4, eventTime: "2024-05-01T22:00:00.000Z" },
        { line: 5, eventTime: "2024-05-01T04:15:00.000Z" },
        { line: 6, reason: "PARSE_FAIL", detail: 'event time "ts": offset out of range: +25:00' },
        { line: 7, reason: "PARSE_FAIL", detail: 'event time "ts": offset out of range: +05:60' },
        {
          line: 8,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": not an ISO 8601 timestamp: "2024-05-01T10:00:00+5:45"',
        },
      ],
    });
  });

  it("a local time in a DST gap does not exist: PARSE_FAIL; the instants either side of the gap are exact", async () => {
    await runCase({
      over: { timestamps: { format: "iso8601", timeZone: "America/New_York" } },
      batches: [
        lines(
          ev("gap", { ts: "2024-03-10 02:30:00" }),
          ev("before", { ts: "2024-03-10 01:59:59.999" }),
          ev("after", { ts: "2024-03-10 03:00:00" }),
        ),
      ],
      rows: [
        {
          line: 1,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": local time does not exist in America/New_York (DST gap): 2024-03-10 02:30:00',
        },
        { line: 2, eventTime: "2024-03-10T06:59:59.999Z" },
        { line: 3, eventTime: "2024-03-10T07:00:00.000Z" },
      ],
    });
  });

  it("a local time in a DST overlap is ambiguous: the earlier instant; an offset picks the later one", async () => {
    await runCase({
      over: { timestamps: { format: "iso8601", timeZone: "America/New_York" } },
      batches: [
        lines(
          ev("a", { ts: "2024-11-03 01:30:00" }),
          ev("b", { ts: "2024-11-03 01:30:00-05:00" }),
          ev("c", { ts: "2024-11-03 00:59:59" }),
          ev("d", { ts: "2024-11-03 02:00:00" }),
        ),
      ],
      rows: [
        { line: 1, eventTime: "2024-11-03T05:30:00.000Z" },
        { line: 2, eventTime: "2024-11-03T06:30:00.000Z" },
        { line: 3, eventTime: "2024-11-03T04:59:59.000Z" },
        { line: 4, eventTime: "2024-11-03T07:00:00.000Z" },
      ],
    });
  });

  it("leap days: 2024-02-29 and 2000-02-29 exist; 2023-02-29, 2100-02-29 and April 31 are PARSE_FAIL", async () => {
    await runCase({
      batches: [
        lines(
          ev("a", { ts: "2024-02-29T12:00:00Z" }),
          ev("b", { ts: "2000-02-29T12:00:00Z" }),
          ev("c", { ts: "2023-02-29T12:00:00Z" }),
          ev("d", { ts: "2100-02-29T12:00:00Z" }),
          ev("e", { ts: "2024-04-31T12:00:00Z" }),
          ev("f", { ts: "2024-13-01T12:00:00Z" }),
        ),
      ],
      rows: [
        { line: 1, eventTime: "2024-02-29T12:00:00.000Z" },
        { line: 2, eventTime: "2000-02-29T12:00:00.000Z" },
        { line: 3, reason: "PARSE_FAIL", detail: 'event time "ts": no such date: 2023-02-29' },
        { line: 4, reason: "PARSE_FAIL", detail: 'event time "ts": no such date: 2100-02-29' },
        { line: 5, reason: "PARSE_FAIL", detail: 'event time "ts": no such date: 2024-04-31' },
        { line: 6, reason: "PARSE_FAIL", detail: 'event time "ts": field out of range: 2024-13-01T12:00:00Z' },
      ],
    });
  });

  it("clock fields out of range (leap second, 24:00) and fractions finer than a microsecond are PARSE_FAIL, never rounded", async () => {
    await runCase({
      batches: [
        lines(
          ev("a", { ts: "2016-12-31T23:59:60Z" }),
          ev("b", { ts: "2024-05-01T24:00:00Z" }),
          ev("c", { ts: "2024-05-01T10:00:00.1234Z" }),
          ev("d", { ts: "2024-05-01T10:00:00.123000Z" }),
          ev("e", { ts: "2024-05-01T10:00:00.1234567Z" }),
          ev("f", { ts: "2024-05-01T10:00:00.123456000Z" }),
        ),
      ],
      rows: [
        {
          line: 1,
          reason: "PARSE_FAIL",
          detail:
            'event time "ts": a leap second (:60) has no instant of its own (PostgreSQL and POSIX time have none): 2016-12-31T23:59:60Z',
        },
        { line: 2, reason: "PARSE_FAIL", detail: 'event time "ts": field out of range: 2024-05-01T24:00:00Z' },
        { line: 3, eventTime: "2024-05-01T10:00:00.123400Z" },
        { line: 4, eventTime: "2024-05-01T10:00:00.123Z" },
        {
          line: 5,
          reason: "PARSE_FAIL",
          detail: 'event time "ts": a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)',
        },
        { line: 6, eventTime: "2024-05-01T10:00:00.123456Z" },
      ],
    });
  });

  it("non-ASCII digits (Arabic-Indic, full-width) are neither timestamps nor decimals", async () => {
    await runCase({
      batches: [lines(ev("a", { ts: "٢٠٢٤-٠٥-٠١T10:00:00Z" }), ev("b", { amount: "١٢" }), ev("c", { amount: "１２" }))],
      rows: [
        { line: 1, reason: "PARSE_FAIL", detail: 'event time "ts": not an ISO 8601 timestamp: "٢٠٢٤-٠٥-٠١T10:00:00Z"' },
        { line: 2, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "١٢"' },
        { line: 3, reason: "INVALID_VALUE", detail: 'value "amount": not a decimal number: "１２"' },
      ],
    });
  });

  it("an unparseable ingestion time is PARSE_FAIL; future skew is judged against it (the boundary is accepted)", async () => {
    await runCase({
      over: { fields: { ...BASE_FIELDS, ingestionTime: "recv" }, admission: { maxFutureSkew: "1 hour" } },
      batches: [
        lines(
          ev("a", { recv: "yesterday" }),
          ev("b", { recv: "2024-05-01T09:00:00Z" }),
          ev("c", { recv: "2024-05-01T08:59:59.999Z" }),
          ev("d", { recv: { t: 1 } }),
        ),
      ],
      rows: [
        { line: 1, reason: "PARSE_FAIL", detail: 'ingestion time "recv": not an ISO 8601 timestamp: "yesterday"' },
        { line: 2 },
        { line: 3, reason: "FUTURE_TS", detail: "event time is 3600001 ms after its ingestion time (max 3600000 ms)" },
        { line: 4, reason: "PARSE_FAIL", detail: 'ingestion time "recv": not an ISO 8601 timestamp: "{\\"t\\":1}"' },
      ],
    });
  });

  it("duplicate event ids within one batch: the first is accepted, the others DUPLICATE (AMENDED_DUPLICATE when the value differs); a quarantined first does not count", async () => {
    const dup = "an accepted record with this event id is already in bronze";
    const amended =
      "an accepted record with this event id and other content (event time, group key or value) is already in bronze; the first version stays (admission.dedupe: first)";
    await runCase({
      batches: [
        lines(
          ev("a", { amount: 1 }),
          ev("a", { amount: 2 }),
          ev("b"),
          ev("a", { amount: 1 }),
          ev("c", { ts: "bad" }),
          ev("c", { amount: 5 }),
        ),
      ],
      rows: [
        { line: 1, eventId: "a" },
        { line: 2, reason: "AMENDED_DUPLICATE", detail: amended },
        { line: 3, eventId: "b" },
        { line: 4, reason: "DUPLICATE", detail: dup },
        { line: 5, reason: "PARSE_FAIL", detail: 'event time "ts": not an ISO 8601 timestamp: "bad"' },
        { line: 6, eventId: "c" },
      ],
      windows: [["k", 3, "7"]],
    });
  });

  it("duplicate event ids across batches are DUPLICATE in the later batch", async () => {
    const dup = "an accepted record with this event id is already in bronze";
    await runCase({
      batches: [lines(ev("a"), ev("b")), lines(ev("b"), ev("c"), ev("a"))],
      rows: [
        { line: 1, eventId: "a" },
        { line: 2, eventId: "b" },
        { line: 1, reason: "DUPLICATE", detail: dup },
        { line: 2, eventId: "c" },
        { line: 3, reason: "DUPLICATE", detail: dup },
      ],
      windows: [["k", 3, "3"]],
    });
  });

  it("a line longer than 1 MiB is MALFORMED with its raw text cut at the limit; a line of exactly the limit is a record", async () => {
    const head = `{"id":"long","ts":"${TS}","amount":1,"key":"k","pad":"`;
    const tooLong = head + "x".repeat(MAX_RECORD_BYTES + 10 - head.length) + '"}';
    const atLimit =
      `{"id":"edge","ts":"${TS}","amount":1,"key":"k","pad":"` + "y".repeat(MAX_RECORD_BYTES - head.length - 2) + '"}';
    expect([MAX_RECORD_BYTES, atLimit.length, tooLong.length]).toEqual([1_048_576, 1_048_576, 1_048_588]);
    await runCase({
      batches: [lines(ev("before"), tooLong, atLimit, ev("after"))],
      rows: [
        { line: 1, eventId: "before" },
        { line: 2, reason: "MALFORMED", detail: "longer than 1048576 bytes", raw: tooLong.slice(0, MAX_RECORD_BYTES) },
        { line: 3, eventId: "edge", raw: atLimit },
        { line: 4, eventId: "after" },
      ],
    });
  });

  it("a group key or event id too long for an index is MALFORMED, and the rest of the source still lands", async () => {
    // Without this, one record would fail the whole file's transaction ("index row size exceeds
    // btree maximum"), every time it is retried. The limit is in UTF-8 bytes.
    const random = (n: number) =>
      randomBytes(Math.ceil(n / 2))
        .toString("hex")
        .slice(0, n); // incompressible, unlike "k".repeat(n)
    await runCase({
      batches: [
        lines(
          ev("k2048", { key: "k".repeat(2048) }),
          ev("k2049", { key: "k".repeat(2049) }),
          ev("rand", { key: random(10_000) }),
          ev("crabs", { key: "🦀".repeat(513) }),
          ev(random(3000)),
          ev("ok"),
        ),
      ],
      rows: [
        { line: 1, key: "k".repeat(2048) },
        { line: 2, reason: "MALFORMED", detail: "group key longer than 2048 bytes (UTF-8)", key: "" },
        { line: 3, reason: "MALFORMED", detail: "group key longer than 2048 bytes (UTF-8)", key: "" },
        { line: 4, reason: "MALFORMED", detail: "group key longer than 2048 bytes (UTF-8)", key: "" },
        {
          line: 5,
          reason: "MALFORMED",
          detail: "event id longer than 2048 bytes (UTF-8)",
          eventId: expect.stringMatching(/^hostile:[0-9a-f-]{36}:5$/) as unknown as string,
        },
        { line: 6, eventId: "ok" },
      ],
      windows: [
        ["k".repeat(2048), 1, "1"],
        ["k", 1, "1"],
      ],
    });
  });

  const SQL_KEYS = [
    "'; DROP TABLE x; --",
    '"',
    "\\",
    "\\N",
    "'",
    "%_*",
    "$1",
    "a\tb",
    "a\nb",
    "a\rb",
    " padded ",
    "=cmd|' /C calc'!A0",
    "Robert'); DROP TABLE straggler.bronze_events;--",
    "E'\\x00'",
  ];

  it("keys full of SQL metacharacters land and aggregate verbatim (JSON lines)", async () => {
    const { pool } = await getDb();
    await runCase({
      batches: [
        lines(
          ...SQL_KEYS.map((k, i) => ev(`s${i}`, { key: k, amount: i + 1 })),
          ev("again", { key: SQL_KEYS[0], amount: 100 }),
        ),
      ],
      rows: [...SQL_KEYS.map((k, i) => ({ line: i + 1, key: k })), { line: SQL_KEYS.length + 1, key: SQL_KEYS[0]! }],
      windows: SQL_KEYS.map((k, i) => [k, i === 0 ? 2 : 1, String(i === 0 ? 101 : i + 1)] as [string, number, string]),
    });
    expect(
      (await pool.query("SELECT to_regclass('straggler.bronze_events') IS NOT NULL AS still_there")).rows[0]
        .still_there,
    ).toBe(true);
  });

  const UNICODE_KEYS = [
    "🦀",
    "👨‍👩‍👧",
    "مرحبا بالعالم",
    "\u202Eevil\u202C",
    "é",
    "e\u0301",
    "line\u2028sep",
    "中文键",
    "zero\u200Bwidth",
    "Ω≈ç√∫",
  ];

  it("Unicode keys (emoji, ZWJ, RTL, bidi override, combining vs precomposed) land verbatim, never normalised", async () => {
    await runCase({
      batches: [lines(...UNICODE_KEYS.map((k, i) => ev(`u${i}`, { key: k, amount: i })))],
      rows: UNICODE_KEYS.map((k, i) => ({ line: i + 1, key: k, value: String(i) })),
      windows: UNICODE_KEYS.map((k, i) => [k, 1, String(i)] as [string, number, string]),
    });
  });

  it("keys with SQL metacharacters and Unicode in CSV (quoted, doubled quotes, commas) land verbatim", async () => {
    const keys = ["'; DROP TABLE x; --", '"', "\\", "\\N", "a,b", "🦀", "مرحبا", "say \"hi\", 'bye'"];
    const quote = (s: string) => `"${s.replaceAll('"', '""')}"`;
    await runCase({
      format: "csv",
      via: "file",
      batches: [csv(...keys.map((k, i) => `c${i},${TS},${i + 1},${quote(k)}`))],
      rows: keys.map((k, i) => ({ line: i + 2, key: k })),
      windows: keys.map((k, i) => [k, 1, String(i + 1)] as [string, number, string]),
    });
  });

  it("__proto__ and constructor fields pollute nothing; such key values are ordinary keys", async () => {
    await runCase({
      batches: [
        lines(
          `{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"id":"a","ts":"${TS}","amount":1,"key":"__proto__"}`,
          ev("b", { key: "constructor" }),
          ev("c", { key: "toString" }),
        ),
      ],
      rows: [
        { line: 1, key: "__proto__" },
        { line: 2, key: "constructor" },
        { line: 3, key: "toString" },
      ],
      windows: [
        ["__proto__", 1, "1"],
        ["constructor", 1, "1"],
        ["toString", 1, "1"],
      ],
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, "polluted")).toBe(false);
  });

  it("a CSV header naming a column twice refuses the whole file: nothing lands, nothing is recorded", async () => {
    // Design: a header is the file's schema; without one there are no records to classify, so the
    // file fails (the CLI reports it) and lands once it is fixed. No partial landing.
    const { pool } = await getDb();
    const p = basePipeline(pipelineName(), "csv");
    const file = path.join(DIR, `${p.name}.csv`);
    writeFileSync(file, `id,ts,id,amount\na,${TS},b,1\n`);
    await expect(landFile(pool, p, file, "dup-header.csv", { landingTimeMs: LANDED })).rejects.toThrow(
      'CSV header (line 1) names column "id" twice',
    );
    const n = await pool.query(
      "SELECT (SELECT count(*)::int FROM straggler.bronze WHERE pipeline = $1) AS bronze, (SELECT count(*)::int FROM straggler.landed_sources WHERE pipeline = $1) AS sources",
      [p.name],
    );
    expect(n.rows[0]).toEqual({ bronze: 0, sources: 0 });
  });

  it("pipeline names full of SQL metacharacters, Unicode, '/' or '..' are refused by the config schema", () => {
    const message = "expected 1-63 characters of a-z, 0-9, '_' or '-', starting with a letter or digit";
    for (const name of [
      "'; DROP TABLE x; --",
      '"',
      "\\",
      "🦀",
      "مرحبا",
      "../etc",
      "a/b",
      "..",
      "a..b",
      "",
      "-lead",
      "UPPER",
      "x".repeat(64),
      "a b",
      "a\u0000b",
    ]) {
      const r = pipelineSchema.safeParse({ ...basePipelineRaw(), name });
      expect(r.success, name).toBe(false);
      expect(r.error!.issues.map((i) => [i.path.join("."), i.message])).toEqual([["name", message]]);
    }
  });
});

function basePipelineRaw(): Record<string, unknown> {
  return {
    name: "x",
    source: { landingDir: DIR, format: "jsonl" },
    fields: BASE_FIELDS,
    window: { type: "tumbling", size: "1 hour" },
    watermark: { delay: "1 hour" },
  };
}

describe("hostile and broken input: HTTP requests", () => {
  const TOKEN = "hostile-token-0123456789";
  const auth = { authorization: `Bearer ${TOKEN}` };
  const LIMIT = 64 * 1024;
  const httpPipelines = Array.from({ length: 8 }, (_, i) => basePipeline(`http-${i + 1}`, "jsonl"));
  let server: Server | undefined;
  let base = "";

  beforeAll(async () => {
    const { pool } = await getDb();
    const app = createApp({
      pool,
      pipelines: httpPipelines,
      log: createLogger("silent"),
      token: TOKEN,
      maxBodyBytes: LIMIT,
    });
    await new Promise<void>((resolve) => {
      server = app.listen(0, "127.0.0.1", () => {
        const a = server!.address();
        base = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`;
        resolve();
      });
    });
  });
  afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  const post = (name: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${base}/pipelines/${name}/events`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/x-ndjson", ...headers },
      body: typeof body === "string" ? body : new Uint8Array(body),
    });

  /** The pipeline's ledger, after checking that it balances and that reconcile counts the same rows by source. */
  async function ledgerOf(name: string) {
    const { pool } = await getDb();
    const l = (
      await pool.query(
        "SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = $1",
        [name],
      )
    ).rows[0] ?? { landed: 0, accepted: 0, quarantined: 0 };
    expect(l.accepted + l.quarantined).toBe(l.landed);
    const rec = await reconcile(
      pool,
      httpPipelines.find((p) => p.name === name)!,
    );
    expect([rec.ledger.landed, rec.ledger.landedBySource, rec.ledger.balanced]).toEqual([l.landed, l.landed, true]);
    return l;
  }

  it("a malformed JSON array body is 400 naming the body; nothing lands", async () => {
    const r = await post("http-1", `[${ev("a")},`, { "content-type": "application/json" });
    expect([r.status, await r.json()]).toEqual([
      400,
      { error: "invalid_request", message: "body: invalid JSON array: Parser has expected a value" },
    ]);
    expect(await ledgerOf("http-1")).toEqual({ landed: 0, accepted: 0, quarantined: 0 });
  });

  it("an empty or blank body is 400; nothing lands", async () => {
    for (const body of ["", "  \n\r\n  "]) {
      const r = await post("http-1", body);
      expect([r.status, await r.json()]).toEqual([
        400,
        { error: "invalid_request", message: "body: expected a JSON array of events or NDJSON, got an empty body" },
      ]);
    }
    expect(await ledgerOf("http-1")).toEqual({ landed: 0, accepted: 0, quarantined: 0 });
  });

  it("a JSON array of non-objects lands each element as a MALFORMED record", async () => {
    const r = await post("http-2", `[1, "x", null, [${ev("inner")}], ${ev("a")}]`, {
      "content-type": "application/json",
    });
    expect([r.status, await r.json()]).toEqual([
      201,
      expect.objectContaining({ landed: 5, accepted: 1, quarantined: 4, byReason: { MALFORMED: 4 } }),
    ]);
    expect(await ledgerOf("http-2")).toEqual({ landed: 5, accepted: 1, quarantined: 4 });
  });

  it("an NDJSON body with invalid UTF-8, a NUL and a broken line quarantines those lines only", async () => {
    const body = Buffer.concat([
      Buffer.from(ev("a") + "\n"),
      Buffer.from(`{"id":"b","ts":"${TS}","amount":1,"key":"`),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}\n'),
      Buffer.from(`{"id":"c","key":"\u0000"}\n{"id":\n\n`),
      Buffer.from(ev("d") + "\n"),
    ]);
    const r = await post("http-3", body);
    expect([r.status, (await r.json()).byReason]).toEqual([201, { MALFORMED: 3 }]);
    expect(await ledgerOf("http-3")).toEqual({ landed: 5, accepted: 2, quarantined: 3 });
    const { pool } = await getDb();
    const q = await pool.query(
      "SELECT source_line, detail FROM straggler.quarantine WHERE pipeline = 'http-3' ORDER BY seq",
    );
    expect(q.rows).toEqual([
      { source_line: 2, detail: "invalid UTF-8" },
      { source_line: 3, detail: "contains a NUL character" },
      { source_line: 4, detail: "invalid JSON: Object value expected after ':' at position 6" },
    ]);
  });

  it("an oversized request body is 413 JSON; nothing lands", async () => {
    const body = lines(...Array.from({ length: 2000 }, (_, i) => ev(`big${i}`)));
    expect(body.length).toBeGreaterThan(LIMIT);
    const r = await post("http-4", body);
    expect([r.status, await r.json()]).toEqual([
      413,
      { error: "payload_too_large", message: "request body is larger than the limit" },
    ]);
    expect(await ledgerOf("http-4")).toEqual({ landed: 0, accepted: 0, quarantined: 0 });
  });

  it("a JSON array body nested too deep is 400, not a stack overflow (500)", async () => {
    const r = await post("http-5", `[{"id":"a","ts":"${TS}","amount":1,"x":${"[".repeat(5000)}${"]".repeat(5000)}}]`, {
      "content-type": "application/json",
    });
    expect([r.status, await r.json()]).toEqual([
      400,
      { error: "invalid_request", message: "body: invalid JSON array: an element is nested deeper than 1000 levels" },
    ]);
    const deep = await post("http-5", "[".repeat(30_000) + "]".repeat(30_000), { "content-type": "application/json" });
    expect([deep.status, (await deep.json()).message]).toEqual([
      400,
      "body: invalid JSON array: an element is nested deeper than 1000 levels",
    ]);
    expect(await ledgerOf("http-5")).toEqual({ landed: 0, accepted: 0, quarantined: 0 });
  });

  it("keys with SQL metacharacters and Unicode land verbatim through the route", async () => {
    const keys = ["'; DROP TABLE x; --", '"', "\\", "🦀", "مرحبا"];
    const r = await post(
      "http-6",
      JSON.stringify(keys.map((k, i) => ({ id: `k${i}`, ts: TS, amount: i + 1, key: k }))),
      { "content-type": "application/json" },
    );
    expect([r.status, (await r.json()).accepted]).toEqual([201, keys.length]);
    expect(await ledgerOf("http-6")).toEqual({ landed: keys.length, accepted: keys.length, quarantined: 0 });
    const { pool } = await getDb();
    await runBatch(pool, httpPipelines[5]!, "once");
    for (const [i, k] of keys.entries()) {
      const w = await (await fetch(`${base}/pipelines/http-6/windows?key=${encodeURIComponent(k)}`)).json();
      expect(w.map((x: { group_key: string; value_sum: string }) => [x.group_key, x.value_sum])).toEqual([
        [k, String(i + 1)],
      ]);
    }
  });

  it("pipeline names with SQL metacharacters, Unicode or traversal in the route are 404 JSON, never an SQL error", async () => {
    const { pool } = await getDb();
    const before = (await pool.query("SELECT count(*)::int AS n FROM straggler.bronze_events")).rows[0].n;
    for (const name of [
      "'; DROP TABLE x; --",
      '"',
      "\\",
      "🦀",
      "مرحبا",
      "../http-1",
      "http-1/../http-2",
      "%00",
      "http-1\u0000",
    ]) {
      const enc = encodeURIComponent(name);
      for (const [method, url] of [
        ["POST", `${base}/pipelines/${enc}/events`],
        ["GET", `${base}/pipelines/${enc}/windows`],
        ["GET", `${base}/pipelines/${enc}/quarantine`],
      ] as const) {
        const r = await fetch(url, method === "POST" ? { method, headers: auth, body: ev("x") } : {});
        const body = await r.json();
        expect([r.status, body], `${method} ${name}`).toEqual([
          404,
          { error: "not_found", message: `no pipeline named ${JSON.stringify(name)}` },
        ]);
      }
    }
    expect((await pool.query("SELECT count(*)::int AS n FROM straggler.bronze_events")).rows[0].n).toBe(before);
  });
});
