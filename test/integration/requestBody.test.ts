/**
 * Request bodies held in memory or spooled to a file (src/http/body.ts): a
 * body up to the memory limit is held, a larger one spooled; both read to
 * the same records and land as the same bronze rows; a body over the limit
 * is 413 whichever way it was being kept, and leaves no file behind.
 */
import { mkdtempSync, readdirSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readBody, type RequestBody } from "../../src/http/body.js";
import { HttpError } from "../../src/http/errors.js";
import { createLogger } from "../../src/log.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

// Spool folders of this file go to a folder of its own, checked empty after each read.
const spoolParent = mkdtempSync(path.join(os.tmpdir(), "request-body-test-"));
process.env.TMPDIR = spoolParent;
const spooled = () => readdirSync(spoolParent);

const ev = (id: string, minute: number, v: number | string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, t: `2024-01-15T12:${String(minute).padStart(2, "0")}:00Z`, v, ...extra });

/** Bodies of every kind: NDJSON with a BOM, blank and bad lines; a JSON array with nesting, escapes and exact numbers; the array gzip-encoded. */
const NDJSON =
  "\ufeff" +
  [ev("n1", 1, 10), "", ev("n2", 2, "1.50"), "{not json", ev("n3", 3, 12.34567890123456789, { tag: 'é\\t"x"' })].join(
    "\n",
  ) +
  "\n";
const ARRAY = `[ ${[ev("a1", 4, 1), ev("a2", 5, 2, { nested: { deep: [1, [2, [3]]], s: "line\nbreak" } }), `{"id":"a3","t":"2024-01-15T12:06:00Z","v":1.000000000000000000001}`, ev("a4", 7, "x")].join(" ,\n ")} ]`;
const BODIES: { name: string; body: Uint8Array<ArrayBuffer>; headers?: Record<string, string> }[] = [
  { name: "NDJSON", body: new Uint8Array(Buffer.from(NDJSON)) },
  { name: "JSON array", body: new Uint8Array(Buffer.from(ARRAY)), headers: { "content-type": "application/json" } },
  {
    name: "gzip JSON array",
    body: new Uint8Array(gzipSync(ARRAY)),
    headers: { "content-type": "application/json", "content-encoding": "gzip" },
  },
];

/** A server that reads each body with `readBody(limit, memory)` and answers what it read (or the HttpError). */
function bodyServer(limitBytes: number, memoryMaxBytes: number): Promise<{ base: string; close(): Promise<void> }> {
  const server: Server = createServer((req: IncomingMessage, res) => {
    void (async () => {
      let body: RequestBody | undefined;
      try {
        body = await readBody(req, limitBytes, {}, memoryMaxBytes);
        const records = [];
        for await (const r of body.records()) records.push(r);
        const whileHeld = spooled().length;
        await body.remove();
        res.end(
          JSON.stringify({
            held: body.held,
            sha256: body.sha256,
            bytes: body.bytes,
            format: body.format,
            records,
            whileHeld,
            afterRemove: spooled().length,
          }),
        );
      } catch (e) {
        res.statusCode = e instanceof HttpError ? e.status : 500;
        res.end(JSON.stringify({ message: (e as Error).message, afterError: spooled().length }));
      }
    })();
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const a = server.address();
      resolve({
        base: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    }),
  );
}

describe("readBody", () => {
  it("a body within the memory limit is held, a larger one spooled; both read to the same records, hash and size, and remove() leaves no file", async () => {
    const memory = await bodyServer(1_000_000, 256 * 1024);
    const file = await bodyServer(1_000_000, 100); // every body here is larger than 100 bytes: spooled partway through
    try {
      for (const { name, body, headers } of BODIES) {
        const m = await (await fetch(memory.base, { method: "POST", body, headers })).json();
        const f = await (await fetch(file.base, { method: "POST", body, headers })).json();
        expect([name, m.held, m.whileHeld, m.afterRemove]).toEqual([name, "memory", 0, 0]);
        expect([name, f.held, f.whileHeld, f.afterRemove]).toEqual([name, "file", 1, 0]);
        expect({ ...f, held: "memory", whileHeld: 0 }).toEqual(m);
      }
    } finally {
      await memory.close();
      await file.close();
    }
  });

  it("reads the records exactly: a blank line is skipped, a bad line is a record, numbers keep their text, the BOM is not part of the first record", async () => {
    const s = await bodyServer(1_000_000, 100);
    try {
      const r = await (await fetch(s.base, { method: "POST", body: NDJSON })).json();
      expect([r.format, r.records.map((x: { raw: string }) => x.raw)]).toEqual([
        "ndjson",
        [ev("n1", 1, 10), ev("n2", 2, "1.50"), "{not json", ev("n3", 3, 12.34567890123456789, { tag: 'é\\t"x"' })],
      ]);
      const a = await (await fetch(s.base, { method: "POST", body: ARRAY })).json();
      expect([a.format, a.records.length, a.records[2].raw]).toEqual([
        "array",
        4,
        `{"id":"a3","t":"2024-01-15T12:06:00Z","v":1.000000000000000000001}`,
      ]);
    } finally {
      await s.close();
    }
  });

  it("a body over the limit is 413 with its message, held or already spooled, and no spool file is left", async () => {
    const s = await bodyServer(1_000, 100);
    try {
      const big = Array.from({ length: 100 }, (_, i) => ev(`big-${i}`, 1, i)).join("\n");
      // Streamed without Content-Length: the limit is found while reading, after the body was spooled.
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < big.length; i += 500) c.enqueue(new TextEncoder().encode(big.slice(i, i + 500)));
          c.close();
        },
      });
      const r = await fetch(s.base, { method: "POST", body: stream, duplex: "half" } as RequestInit);
      expect([r.status, await r.json()]).toEqual([
        413,
        { message: "request body is larger than the limit", afterError: 0 },
      ]);
      const gz = await fetch(s.base, { method: "POST", body: gzipSync(big), headers: { "content-encoding": "gzip" } });
      expect([gz.status, await gz.json()]).toEqual([
        413,
        { message: "request body is larger than the limit", afterError: 0 },
      ]);
      const declared = await fetch(s.base, { method: "POST", body: big });
      expect([declared.status, await declared.json()]).toEqual([
        413,
        { message: "request body is larger than the limit", afterError: 0 },
      ]);
      expect(spooled()).toEqual([]);
    } finally {
      await s.close();
    }
  });
});

describe("events bodies held or spooled land alike", () => {
  const getDb = useTestDatabase();
  const TOKEN = "body-token-0123456789abcdef";
  const p = (name: string) =>
    pipeline({
      name,
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
      admission: { maxFractionDigits: 21 },
    }); // a3 has 21 digits after the point
  let held: RunningApi | undefined, spooledApi: RunningApi | undefined;
  beforeAll(async () => {
    const { pool } = await getDb();
    held = await startApi({ pool, pipelines: [p("held")], log: createLogger("silent"), token: TOKEN });
    spooledApi = await startApi({
      pool,
      pipelines: [p("spooled")],
      log: createLogger("silent"),
      token: TOKEN,
      memoryBodyBytes: 0,
    });
  });
  afterAll(async () => {
    await held?.close();
    await spooledApi?.close();
  });

  it("the same bodies through the API, held (group commit) and spooled (a transaction each): the same answers and bronze rows", async () => {
    const { pool } = await getDb();
    const answers: Record<string, unknown[]> = { held: [], spooled: [] };
    for (const [name, api] of [
      ["held", held!],
      ["spooled", spooledApi!],
    ] as const) {
      for (const [i, { body, headers }] of BODIES.entries()) {
        // The same key in both pipelines: the same source, so the same made-up ids for lines without one.
        const r = await fetch(`${api.base}/pipelines/${name}/events`, {
          method: "POST",
          body,
          headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": `body-${i}`, ...headers },
        });
        const a = (await r.json()) as Record<string, unknown>;
        answers[name]!.push([r.status, a.landed, a.accepted, a.quarantined, a.byReason]);
      }
    }
    expect(answers.held).toEqual([
      [201, 4, 3, 1, { MALFORMED: 1 }],
      [201, 4, 3, 1, { INVALID_VALUE: 1 }],
      [201, 4, 0, 4, { DUPLICATE: 3, INVALID_VALUE: 1 }],
    ]);
    expect(answers.spooled).toEqual(answers.held);
    const rows = async (name: string) =>
      (
        await pool.query(
          `SELECT source_line, event_id, raw, event_time, group_key, value, status, reason, detail, input
           FROM straggler.bronze_events WHERE pipeline = $1 ORDER BY seq`,
          [name],
        )
      ).rows;
    const h = await rows("held");
    expect(h).toHaveLength(12);
    expect(await rows("spooled")).toEqual(h);
    const hashes = async (name: string) =>
      (
        await pool.query(
          "SELECT sha256, request_sha256, rows, accepted, by_reason FROM straggler.landed_sources WHERE pipeline = $1 ORDER BY first_seq",
          [name],
        )
      ).rows;
    expect(await hashes("spooled")).toEqual(await hashes("held"));
    expect(spooled()).toEqual([]);
  });
});
