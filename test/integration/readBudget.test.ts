/**
 * Bounded answers and reads that never starve writes, with a real `straggler serve` on a real
 * PostgreSQL (README "REST API": the read budget and the answer budget):
 * - wide values: under the default admission.maxAbsValue a 10-byte `1e131000` is INVALID_VALUE;
 *   under a pipeline configured with the 1e131000 ceiling, 100 windows of 131,001-digit numerics
 *   (about 524 KB a row) are answered 200 within the 4 MiB budget, cut and marked
 *   `Straggler-Truncated: true`, also four at once, and the service stays healthy;
 * - starvation: 12 unauthenticated reads held by a lock: 4 run (STRAGGLER_READ_CONCURRENCY, on 4
 *   read connections), 8 are
 *   answered 503 `busy` with `Retry-After: 1` at once, an authenticated POST /events lands (201) and
 *   /health answers 200 meanwhile; clients that hang up have their queries cancelled on the
 *   server; the reads left are stopped by STRAGGLER_READ_TIMEOUT (503 `read_timeout`).
 */
import http from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "../helpers/db.js";
import { servicePipelineYaml } from "../helpers/fixtures.js";
import { freePort, startServe, waitFor, type ServeProcess } from "../helpers/service.js";

const getDb = useTestDatabase();
const TOKEN = "budget-token-0123456789abcdef";
const T0 = Date.parse("2026-11-30T10:00:00Z");
const WIDE = "1" + "0".repeat(131000);
const BUDGET = 4 * 1024 * 1024;

let service: ServeProcess;
beforeAll(async () => {
  const { url } = await getDb();
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-budget-"));
  const config = path.join(dir, "pipelines.yaml");
  writeFileSync(
    config,
    `pipelines:${servicePipelineYaml("wide", mkdtempSync(path.join(dir, "in-")), ['admission: { maxAbsValue: "1e131000" }'])}${servicePipelineYaml("plain", mkdtempSync(path.join(dir, "in-")))}`,
  );
  service = startServe(await freePort(), {
    DATABASE_URL: url,
    STRAGGLER_PIPELINES: config,
    STRAGGLER_API_TOKEN: TOKEN,
    STRAGGLER_READ_CONCURRENCY: "4",
    STRAGGLER_READ_CONNECTIONS: "4",
    STRAGGLER_READ_TIMEOUT: "15 seconds",
  });
  await service.waitHealthy();
}, 90_000);
afterAll(() => {
  if (service && service.child.exitCode === null) service.child.kill("SIGKILL");
});

const post = (pipeline: string, lines: object[]) =>
  service.request("POST", `/pipelines/${pipeline}/events`, {
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/x-ndjson" },
    body: lines
      .map((l) => JSON.stringify(l))
      .join("\n")
      .replace(/"v":"(1e131000)"/g, '"v":$1'),
    timeoutMs: 30_000,
  });

/** A GET whose client can hang up: `destroy()` closes its connection before the answer. */
function openGet(urlPath: string) {
  let req!: http.ClientRequest;
  const answer = new Promise<{ status: number; retryAfter?: string; body: string }>((resolve, reject) => {
    req = http.get(`${service.baseUrl}${urlPath}`, { agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"] as string | undefined, body }),
      );
    });
    req.on("error", reject);
  });
  answer.catch(() => undefined);
  return { answer, destroy: () => req.destroy() };
}

describe("bounded answers", () => {
  it(
    "a 10-byte 1e131000 is INVALID_VALUE under the default bound; 100 windows of 131,001-digit values are answered within the 4 MiB budget, cut and marked, four at once",
    { timeout: 180_000 },
    async () => {
      const { pool } = await getDb();
      const plain = await post("plain", [{ id: "w", t: new Date(T0).toISOString(), k: "a", v: "1e131000" }]);
      expect([plain.status, (plain.json as { byReason: unknown }).byReason]).toEqual([201, { INVALID_VALUE: 1 }]);
      const wide = await post(
        "wide",
        Array.from({ length: 100 }, (_, i) => ({
          id: `w${i}`,
          t: new Date(T0 + i * 60_000).toISOString(),
          k: "a",
          v: "1e131000",
        })),
      );
      expect([wide.status, (wide.json as { accepted: number }).accepted]).toEqual([201, 100]);
      await waitFor(
        "the stream to make the 100 wide windows",
        async () => {
          const { rows } = await pool.query(
            "SELECT count(*)::int AS n FROM straggler.window_results WHERE pipeline = 'wide'",
          );
          return rows[0].n === 100 ? true : undefined;
        },
        120_000,
        200,
      );
      const ask = () => service.request("GET", "/pipelines/wide/windows?limit=100", { timeoutMs: 60_000 });
      const one = await ask();
      const rows = one.json as { value_sum: string; value_max: string }[];
      const bytes = Buffer.byteLength(one.text);
      const rowBytes = Buffer.byteLength(JSON.stringify(rows[0]));
      expect([
        one.status,
        one.headers["straggler-truncated"],
        one.headers["straggler-rows"],
        rows.every((r) => r.value_sum === WIDE && r.value_max === WIDE),
      ]).toEqual([200, "true", String(rows.length), true]);
      // Within the budget, and one more row would not have been.
      expect([bytes <= BUDGET, bytes + rowBytes > BUDGET, rows.length]).toEqual([
        true,
        true,
        Math.floor((BUDGET - 2) / (rowBytes + 1)),
      ]);
      const four = await Promise.all([ask(), ask(), ask(), ask()]);
      expect(four.map((r) => [r.status, r.text.length === one.text.length])).toEqual(Array(4).fill([200, true]));
      expect((await service.request("GET", "/health")).status).toBe(200);
      expect(service.child.exitCode).toBe(null);
    },
  );
});

describe("the windows' cursor", () => {
  it(
    "a page cut to the budget carries Straggler-Next; following it returns every wide window once, in order; a full page does too, the last page not; a bad cursor is 400",
    { timeout: 180_000 },
    async () => {
      // The 100 wide windows of the test above, one per minute from T0, key a.
      const seen: string[] = [];
      let after: string | undefined;
      const cuts: [number, string | undefined, boolean][] = [];
      for (let page = 0; page < 40; page++) {
        const r = await service.request("GET", `/pipelines/wide/windows?limit=100${after ? `&after=${after}` : ""}`, {
          timeoutMs: 60_000,
        });
        expect(r.status).toBe(200);
        const rows = r.json as { window_start: string }[];
        seen.push(...rows.map((x) => x.window_start));
        after = r.headers["straggler-next"] as string | undefined;
        cuts.push([rows.length, r.headers["straggler-truncated"] as string | undefined, after !== undefined]);
        if (after === undefined) break;
      }
      // One-minute windows, one event each; about 524 KB a row, so about 8 rows fit a page.
      expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => new Date(T0 + i * 60_000).toISOString()));
      // Every page but the last was cut to the budget and carries the cursor; the last carries neither.
      expect(cuts.slice(0, -1).every(([n, truncated, next]) => n > 0 && n < 100 && truncated === "true" && next)).toBe(
        true,
      );
      expect(cuts.at(-1)!.slice(1)).toEqual([undefined, false]);
      // A full page (limit 3 of 100 windows) carries the cursor; the page that is not full does not.
      const pages: number[] = [];
      after = undefined;
      for (;;) {
        const r = await service.request("GET", `/pipelines/wide/windows?limit=3${after ? `&after=${after}` : ""}`, {
          timeoutMs: 60_000,
        });
        pages.push((r.json as unknown[]).length);
        after = r.headers["straggler-next"] as string | undefined;
        if (after === undefined) break;
      }
      expect(pages).toEqual([...Array(33).fill(3), 1]);
      const bad = await service.request("GET", "/pipelines/wide/windows?after=not-a-cursor");
      expect([
        bad.status,
        JSON.stringify(bad.json).includes("expected the Straggler-Next header of an earlier page"),
      ]).toEqual([400, true]);
    },
  );
});

describe("reads never starve writes", () => {
  it(
    "12 unauthenticated reads held by a lock: 4 run, 8 are 503 busy at once; POST /events lands and /health answers meanwhile; hung-up reads are cancelled, the rest time out",
    { timeout: 120_000 },
    async () => {
      const { pool } = await getDb();
      const lock = await pool.connect();
      const waiting = async () =>
        (
          await pool.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%"straggler"."window_results"%' AND pid <> pg_backend_pid()`,
          )
        ).rows[0].n as number;
      try {
        await lock.query("BEGIN");
        await lock.query("LOCK TABLE straggler.window_results_table IN ACCESS EXCLUSIVE MODE");
        const gets = Array.from({ length: 12 }, () => openGet("/pipelines/plain/windows?limit=10"));
        const settled: { status: number; retryAfter?: string; body: string }[] = [];
        const answered = new Set<number>();
        gets.forEach(
          (g, i) =>
            void g.answer.then(
              (a) => (settled.push(a), answered.add(i)),
              () => answered.add(i),
            ),
        );
        await waitFor(
          "8 reads answered beyond the read concurrency",
          async () => (settled.length >= 8 ? true : undefined),
          20_000,
        );
        expect(settled.map((a) => [a.status, a.retryAfter, (JSON.parse(a.body) as { error: string }).error])).toEqual(
          Array(8).fill([503, "1", "busy"]),
        );
        await waitFor(
          "the 4 admitted reads waiting on the lock in the database",
          async () => ((await waiting()) === 4 ? true : undefined),
          20_000,
        );
        // Writes and health are not held by the reads.
        const landed = await post("plain", [{ id: "s1", t: new Date(T0).toISOString(), k: "a", v: 1 }]);
        expect([landed.status, (landed.json as { accepted: number }).accepted]).toEqual([201, 1]);
        expect((await service.request("GET", "/health", { timeoutMs: 5_000 })).status).toBe(200);
        // Two clients hang up: their queries are cancelled on the server, the lock still held.
        const unanswered = gets.filter((_, i) => !answered.has(i));
        expect([unanswered.length, settled.length]).toEqual([4, 8]);
        unanswered[0]!.destroy();
        unanswered[1]!.destroy();
        await waitFor(
          "the hung-up reads' queries to be cancelled",
          async () => ((await waiting()) === 2 ? true : undefined),
          10_000,
        );
        // The two left run into the read timeout.
        const left = await Promise.all([unanswered[2]!.answer, unanswered[3]!.answer]);
        expect(left.map((a) => [a.status, a.retryAfter, (JSON.parse(a.body) as { error: string }).error])).toEqual(
          Array(2).fill([503, "5", "read_timeout"]),
        );
      } finally {
        await lock.query("ROLLBACK").catch(() => undefined);
        lock.release();
      }
      // Afterwards reads are answered again: the budget's slots were all given back.
      const again = await Promise.all(
        Array.from({ length: 4 }, () => service.request("GET", "/pipelines/plain/windows?limit=10")),
      );
      expect(again.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    },
  );
});
