/**
 * Inputs real producers send that the hostile-input suite does not cover:
 * numbers written by spreadsheets and loggers, fractions of seconds longer
 * than nine digits, and text that is not UTF-8 by its byte order mark (UTF-16
 * and UTF-32 exports) or, without one, by the NUL bytes of its first four, through the real landing paths (`landStream`,
 * `landFile`) and the HTTP route. Each case asserts the exact bronze rows and
 * that the ledger balances (the harness is hostileInput.test.ts's).
 */
import type { Server } from "node:http";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { SourceRefused } from "../../src/ingest/errors.js";
import { createLogger } from "../../src/log.js";
import { csv, ev, LANDED, landingCases, lines, TS } from "../helpers/landingCases.js";
import { pipeline } from "../helpers/fixtures.js";

const { getDb, DIR, pipelineName, basePipeline, runCase } = landingCases("odd");

const NOT_DECIMAL = (t: string) => `value "amount": not a decimal number: ${JSON.stringify(t)}`;
const utf16le = (s: string) => Buffer.from("\ufeff" + s, "utf16le");
const utf16be = (s: string) => utf16le(s).swap16();
const utf32le = (s: string) =>
  Buffer.concat([
    Buffer.from([0xff, 0xfe, 0, 0]),
    ...[...s].map((c) => {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(c.codePointAt(0)!);
      return b;
    }),
  ]);
const UTF16_LE_REFUSED =
  "UTF-16 text (byte order mark FF FE): records are read as UTF-8; convert it (e.g. iconv -f UTF-16 -t UTF-8)";
const UTF16_BE_REFUSED =
  "UTF-16 text (byte order mark FE FF): records are read as UTF-8; convert it (e.g. iconv -f UTF-16 -t UTF-8)";
const UTF32_LE_REFUSED =
  "UTF-32 text (byte order mark FF FE 00 00): records are read as UTF-8; convert it (e.g. iconv -f UTF-32 -t UTF-8)";

describe("numbers as producers write them", () => {
  it("JSON values: -0, a leading +, .5, 5., 1E+2, +.5e-1 and padded text are decimals; hex, separators, units, signs twice are INVALID_VALUE", async () => {
    const values: Array<[unknown, string | null]> = [
      ["-0", "0"], // numeric reads -0 as 0
      ["+5", "5"],
      [".5", "0.5"],
      ["5.", "5"],
      ["1E+2", "100"],
      ["+.5e-1", "0.05"],
      [" 12 ", "12"],
      ["\u00a012\u3000", "12"], // no-break and ideographic spaces are whitespace too
      ["0e99999999999999999999", "0"],
      ["0x10", null],
      ["1,234.5", null],
      ["1_000", null],
      ["1 234", null],
      ["$5", null],
      ["5%", null],
      ["(5)", null],
      ["--1", null],
      ["1.2.3", null],
      ["-", null],
      ["1e", null],
      ["12\u200b", null], // a zero-width space is not whitespace
    ];
    const { pool } = await getDb();
    const p = await runCase({
      batches: [
        lines(
          ...values.map(([v], i) => ev(`v${i}`, { amount: v })),
          `{"id":"neg-zero-number","ts":"${TS}","amount":-0,"key":"k"}`,
        ),
      ],
      rows: [
        ...values.map(([v, stored], i) =>
          stored === null
            ? { line: i + 1, reason: "INVALID_VALUE" as const, detail: NOT_DECIMAL(v as string), value: null }
            : { line: i + 1, value: stored },
        ),
        { line: values.length + 1, value: "0" },
      ],
    });
    // Summed exactly: -0 + 5 + 0.5 + 5 + 100 + 0.05 + 12 + 12 + 0 + (-0).
    const sum = await pool.query(
      "SELECT value_sum::text AS s, event_count::int AS n FROM straggler.window_results WHERE pipeline = $1",
      [p.name],
    );
    expect(sum.rows).toEqual([{ s: "134.55", n: 10 }]);
  });

  it("CSV values: -0, +3, padded 7 and 1.5E-3 are decimals; a quoted 1,234.5 and 1 234 are INVALID_VALUE", async () => {
    await runCase({
      format: "csv",
      batches: [
        csv(
          `a,${TS},-0,k`,
          `b,${TS},+3,k`,
          `c,${TS}, 7 ,k`,
          `d,${TS},1.5E-3,k`,
          `e,${TS},"1,234.5",k`,
          `f,${TS},1 234,k`,
        ),
      ],
      rows: [
        { line: 2, value: "0" },
        { line: 3, value: "3" },
        { line: 4, value: "7" },
        { line: 5, value: "0.0015" },
        { line: 6, reason: "INVALID_VALUE", detail: NOT_DECIMAL("1,234.5") },
        { line: 7, reason: "INVALID_VALUE", detail: NOT_DECIMAL("1 234") },
      ],
      windows: [["k", 4, "10.0015"]],
    });
  });
});

describe("fractions of a second longer than nine digits", () => {
  it("ISO 8601: zeros after the sixth digit are accepted at any length; a non-zero digit there follows subMicrosecond", async () => {
    const SUB_US = 'event time "ts": a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)';
    await runCase({
      batches: [
        lines(
          ev("a", { ts: "2024-05-01T10:00:00.123456000000Z" }), // numpy datetime64[ps]
          ev("b", { ts: "2024-05-01T10:00:00,500000000000000000000+02:00" }),
          ev("c", { ts: "2024-05-01T10:00:00.1234567890Z" }),
          ev("d", { ts: "2024-05-01T10:00:00.000000000001Z" }),
        ),
      ],
      rows: [
        { line: 1, eventTime: "2024-05-01T10:00:00.123456Z" },
        { line: 2, eventTime: "2024-05-01T08:00:00.500Z" },
        { line: 3, reason: "PARSE_FAIL", detail: SUB_US, eventTime: null },
        { line: 4, reason: "PARSE_FAIL", detail: SUB_US, eventTime: null },
      ],
    });
  });

  it("with subMicrosecond: truncate, a 12-digit fraction keeps its first six digits", async () => {
    await runCase({
      over: { timestamps: { format: "iso8601", subMicrosecond: "truncate" } },
      batches: [lines(ev("a", { ts: "2024-05-01T10:00:00.123456789012Z" }))],
      rows: [{ line: 1, eventTime: "2024-05-01T10:00:00.123456Z" }],
    });
  });
});

describe("epoch numbers finer than a microsecond follow the rule of ISO 8601 fractions", () => {
  const SUB_US = 'event time "ts": a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)';
  const epochLines = () =>
    lines(
      `{"id":"n","ts":1705320180.9876543,"amount":1,"key":"k"}`, // a JSON number
      ev("s", { ts: "1705320180.9876543" }), // the same as a string
      ev("z", { ts: "1705320180.9876540000" }), // zeros after the sixth digit
      ev("neg", { ts: "-0.0000005" }),
    );

  it("epoch_s, refuse (the default): a non-zero seventh digit is PARSE_FAIL, number or string, as in ISO 8601; zeros are exact", async () => {
    await runCase({
      over: { timestamps: { format: "epoch_s" } },
      batches: [epochLines()],
      rows: [
        { line: 1, reason: "PARSE_FAIL", detail: SUB_US, eventTime: null },
        { line: 2, reason: "PARSE_FAIL", detail: SUB_US, eventTime: null },
        { line: 3, eventTime: "2024-01-15T12:03:00.987654Z" },
        { line: 4, reason: "PARSE_FAIL", detail: SUB_US, eventTime: null },
      ],
    });
  });

  it("epoch_s, truncate: the microsecond the instant falls in, stored exactly; before 1970 too (toward the past, as ISO 8601)", async () => {
    await runCase({
      over: { timestamps: { format: "epoch_s", subMicrosecond: "truncate" } },
      batches: [epochLines()],
      rows: [
        { line: 1, eventTime: "2024-01-15T12:03:00.987654Z" },
        { line: 2, eventTime: "2024-01-15T12:03:00.987654Z" },
        { line: 3, eventTime: "2024-01-15T12:03:00.987654Z" },
        { line: 4, eventTime: "1969-12-31T23:59:59.999999Z" },
      ],
    });
  });

  it("epoch_ms, epoch_us and epoch_ns with truncate, and ISO 8601 beside them: one instant, one stored value", async () => {
    await runCase({
      over: { timestamps: { format: "epoch_ms", subMicrosecond: "truncate" } },
      batches: [
        lines(
          `{"id":"n","ts":1705320180987.6543,"amount":1,"key":"k"}`,
          ev("s", { ts: "1705320180987.6543" }),
          ev("neg", { ts: "-0.0005" }),
        ),
      ],
      rows: [
        { line: 1, eventTime: "2024-01-15T12:03:00.987654Z" },
        { line: 2, eventTime: "2024-01-15T12:03:00.987654Z" },
        { line: 3, eventTime: "1969-12-31T23:59:59.999999Z" },
      ],
    });
    await runCase({
      over: { timestamps: { format: "epoch_us", subMicrosecond: "truncate" } },
      batches: [
        lines(`{"id":"n","ts":1705320180987654.3,"amount":1,"key":"k"}`, ev("s", { ts: "1705320180987654.3" })),
      ],
      rows: [
        { line: 1, eventTime: "2024-01-15T12:03:00.987654Z" },
        { line: 2, eventTime: "2024-01-15T12:03:00.987654Z" },
      ],
    });
    await runCase({
      over: { timestamps: { format: "epoch_ns", subMicrosecond: "truncate" } },
      batches: [lines(`{"id":"n","ts":1705320180987654300,"amount":1,"key":"k"}`, ev("neg", { ts: "-500" }))],
      rows: [
        { line: 1, eventTime: "2024-01-15T12:03:00.987654Z" },
        { line: 2, eventTime: "1969-12-31T23:59:59.999999Z" },
      ],
    });
    await runCase({
      over: { timestamps: { format: "iso8601", subMicrosecond: "truncate" } },
      batches: [
        lines(ev("a", { ts: "2024-01-15T12:03:00.9876543Z" }), ev("neg", { ts: "1969-12-31T23:59:59.9999995Z" })),
      ],
      rows: [
        { line: 1, eventTime: "2024-01-15T12:03:00.987654Z" },
        { line: 2, eventTime: "1969-12-31T23:59:59.999999Z" },
      ],
    });
  });
});

describe("text that is not UTF-8: a UTF-16 or UTF-32 byte order mark refuses the source with what to do", () => {
  it("a UTF-16 LE JSON lines file is refused by name with the reason, recorded refused, nothing landed", async () => {
    const { pool } = await getDb();
    const p = basePipeline(pipelineName(), "jsonl");
    const file = path.join(DIR, `${p.name}.jsonl`);
    writeFileSync(file, utf16le(lines(ev("a"), ev("b"))));
    await expect(landFile(pool, p, file, "export.jsonl", { landingTimeMs: LANDED })).rejects.toThrow(
      new SourceRefused(UTF16_LE_REFUSED),
    );
    const src = await pool.query("SELECT source, state, reason FROM straggler.sources WHERE pipeline = $1", [p.name]);
    expect(src.rows).toEqual([{ source: "export.jsonl", state: "refused", reason: UTF16_LE_REFUSED }]);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.bronze WHERE pipeline = $1", [p.name])).rows[0].n,
    ).toBe(0);
  });

  it("a UTF-16 LE CSV file (a spreadsheet's Unicode text export) is refused with the same reason, not as an unreadable header", async () => {
    const { pool } = await getDb();
    const p = basePipeline(pipelineName(), "csv");
    const file = path.join(DIR, `${p.name}.csv`);
    writeFileSync(file, utf16le(csv(`a,${TS},1,k`)));
    await expect(landFile(pool, p, file, "export.csv", { landingTimeMs: LANDED })).rejects.toThrow(
      new SourceRefused(UTF16_LE_REFUSED),
    );
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.bronze WHERE pipeline = $1", [p.name])).rows[0].n,
    ).toBe(0);
  });

  it("UTF-16 BE and UTF-32 LE on stdin are refused by their byte order marks; nothing lands", async () => {
    const { pool } = await getDb();
    for (const [bytes, reason] of [
      [utf16be(lines(ev("a"))), UTF16_BE_REFUSED],
      [utf32le(lines(ev("a"))), UTF32_LE_REFUSED],
    ] as const) {
      const p = basePipeline(pipelineName(), "jsonl");
      await expect(landStream(pool, p, Readable.from([bytes]), "stdin", LANDED)).rejects.toThrow(
        new SourceRefused(reason),
      );
      expect(
        (await pool.query("SELECT count(*)::int AS n FROM straggler.bronze WHERE pipeline = $1", [p.name])).rows[0].n,
      ).toBe(0);
    }
  });

  it("without a byte order mark, UTF-16 and UTF-32 are known by the NUL bytes in their first four (RFC 4627 §3) and refused by name: files, CSV, stdin", async () => {
    const { pool } = await getDb();
    const noMark = (b: Buffer, n: number) => b.subarray(n);
    const cases = [
      [
        "file",
        "jsonl",
        noMark(utf16le(lines(ev("a"), ev("b"))), 2),
        "UTF-16LE text (no byte order mark; its first bytes 7B 00 22 00): records are read as UTF-8; convert it (e.g. iconv -f UTF-16LE -t UTF-8)",
      ],
      [
        "file",
        "csv",
        noMark(utf16be(csv(`a,${TS},1,k`)), 2),
        "UTF-16BE text (no byte order mark; its first bytes 00 69 00 64): records are read as UTF-8; convert it (e.g. iconv -f UTF-16BE -t UTF-8)",
      ],
      [
        "stdin",
        "jsonl",
        noMark(utf32le(lines(ev("a"))), 4),
        "UTF-32LE text (no byte order mark; its first bytes 7B 00 00 00): records are read as UTF-8; convert it (e.g. iconv -f UTF-32LE -t UTF-8)",
      ],
      [
        "stdin",
        "jsonl",
        noMark(utf32le(lines(ev("a"))), 4).swap32(),
        "UTF-32BE text (no byte order mark; its first bytes 00 00 00 7B): records are read as UTF-8; convert it (e.g. iconv -f UTF-32BE -t UTF-8)",
      ],
    ] as const;
    for (const [via, format, bytes, reason] of cases) {
      const p = basePipeline(pipelineName(), format);
      if (via === "file") {
        const file = path.join(DIR, `${p.name}.${format}`);
        writeFileSync(file, bytes);
        await expect(landFile(pool, p, file, `${p.name}.${format}`, { landingTimeMs: LANDED })).rejects.toThrow(
          new SourceRefused(reason),
        );
      } else {
        await expect(landStream(pool, p, Readable.from([bytes]), "stdin", LANDED)).rejects.toThrow(
          new SourceRefused(reason),
        );
      }
      expect(
        (await pool.query("SELECT count(*)::int AS n FROM straggler.bronze WHERE pipeline = $1", [p.name])).rows[0].n,
      ).toBe(0);
    }
  });

  it("a UTF-8 file with a NUL later in its first line is not taken for UTF-16: that line alone is MALFORMED", async () => {
    const withNul = `{"id":"z\u0000","ts":"${TS}","amount":1,"key":"k"}`;
    await runCase({
      batches: [lines(withNul, ev("ok"))],
      rows: [
        { line: 1, reason: "MALFORMED", detail: "contains a NUL character" },
        { line: 2, eventId: "ok" },
      ],
    });
  });

  it("a UTF-8 file whose first character is U+FEFF (a UTF-8 BOM) still lands: only UTF-16/32 marks refuse", async () => {
    await runCase({ via: "file", batches: [Buffer.from("\ufeff" + lines(ev("a")), "utf8")], rows: [{ line: 1 }] });
  });
});

describe("text that is not UTF-8 over HTTP", () => {
  const TOKEN = "odd-token-0123456789";
  const httpPipelines = [basePipeline("odd-http-1", "jsonl")];
  let server: Server | undefined;
  let base = "";

  beforeAll(async () => {
    const { pool } = await getDb();
    const app = createApp({
      pool,
      pipelines: httpPipelines,
      log: createLogger("silent"),
      token: TOKEN,
      maxBodyBytes: 1024 * 1024,
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

  it("a UTF-16 body (NDJSON or a JSON array, held or spooled) is 415 naming the encoding; nothing lands; a UTF-8 one after it lands", async () => {
    const { pool } = await getDb();
    const post = (body: Buffer, type: string) =>
      fetch(`${base}/pipelines/odd-http-1/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": type },
        body: new Uint8Array(body),
      });
    const big = lines(...Array.from({ length: 3000 }, (_, i) => ev(`big-${i}`))); // > 256 KiB as UTF-16: spooled
    for (const [body, type, reason] of [
      [utf16le(lines(ev("a"))), "application/x-ndjson", UTF16_LE_REFUSED],
      [utf16be(`[${ev("a")}]`), "application/json", UTF16_BE_REFUSED],
      [utf16le(big), "application/x-ndjson", UTF16_LE_REFUSED],
      [
        utf16le(lines(ev("a"))).subarray(2),
        "application/x-ndjson",
        "UTF-16LE text (no byte order mark; its first bytes 7B 00 22 00): records are read as UTF-8; convert it (e.g. iconv -f UTF-16LE -t UTF-8)",
      ],
    ] as const) {
      const r = await post(body, type);
      expect([r.status, await r.json()]).toEqual([
        415,
        { error: "unsupported_media_type", message: `body: ${reason}` },
      ]);
    }
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.bronze WHERE pipeline = 'odd-http-1'")).rows[0].n,
    ).toBe(0);
    const ok = await post(Buffer.from(lines(ev("a"))), "application/x-ndjson");
    expect([ok.status, (await ok.json()).accepted]).toEqual([201, 1]);
  });

  it("a body the service cannot spool (its temporary folder gone or full) is 503 with Retry-After, plain or gzipped, never a 400 that calls the body bad; nothing lands", async () => {
    const { pool } = await getDb();
    const big = Buffer.from(lines(...Array.from({ length: 4000 }, (_, i) => ev(`spool-${i}`)))); // > 256 KiB: spooled to a file
    const message =
      "the service cannot hold the request body (ENOENT in its temporary folder); nothing landed, retry later";
    const before = process.env.TMPDIR;
    process.env.TMPDIR = path.join(DIR, "no-such-folder");
    try {
      for (const [body, headers] of [
        [big, {}],
        [gzipSync(big), { "content-encoding": "gzip" }],
        [Buffer.from(`[${big.toString().trim().split("\n").join(",")}]`), { "content-type": "application/json" }],
      ] as const) {
        const r = await fetch(`${base}/pipelines/odd-http-1/events`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/x-ndjson", ...headers },
          body: new Uint8Array(body),
        });
        expect([r.status, r.headers.get("retry-after"), await r.json()]).toEqual([
          503,
          "5",
          { error: "unavailable", message },
        ]);
      }
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
    expect(
      (
        await pool.query(
          "SELECT count(*)::int AS n FROM straggler.bronze WHERE pipeline = 'odd-http-1' AND event_id LIKE 'spool-%'",
        )
      ).rows[0].n,
    ).toBe(0);
  });
});
