/**
 * No secret in the service's output, with a real `straggler serve` on a real PostgreSQL: the
 * bearer tokens (`STRAGGLER_API_TOKEN`, `STRAGGLER_READ_TOKEN`) and the password of
 * `DATABASE_URL` appear in no log line at any level (every request logged, 2xx and 4xx, with its
 * headers), in no answer (`/metrics`, the UI, an error), and in no message of a command that cannot
 * connect. The header itself is logged as `[Redacted]`.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "../helpers/db.js";
import { startCli } from "../helpers/cli.js";
import { servicePipelineYaml } from "../helpers/fixtures.js";
import { freePort, killAndReap, startServe, waitFor, type ServeProcess } from "../helpers/service.js";

const getDb = useTestDatabase();
const TOKEN = "write-secret-7Kq2Zp9Xv4Lm8Rt3";
const READ_TOKEN = "read-secret-Hn5Wc1Yd6Bf0Jg2Q";
const PASSWORD = "db-pass-Vs8Ne3Ux7Ok1";

const started: ServeProcess[] = [];
afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await dropRole?.();
});

/**
 * `url` as a login role of its own whose password is `password` (made for this file, dropped after
 * it): a server that checks passwords (the test container) and one that trusts local connections
 * (a developer's) both take it.
 */
async function withPassword(
  pool: { query: (q: string) => Promise<unknown> },
  url: string,
  password: string,
): Promise<string> {
  const role = `secrets_${process.pid}`;
  await pool.query(`DROP ROLE IF EXISTS ${role}`);
  await pool.query(`CREATE ROLE ${role} LOGIN SUPERUSER PASSWORD '${password}'`);
  dropRole = async () => {
    await pool.query(`DROP OWNED BY ${role} CASCADE`).catch(() => undefined);
    await pool.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  };
  const u = new URL(url);
  u.username = role;
  u.password = password;
  return u.toString();
}
let dropRole: (() => Promise<void>) | undefined;

describe("secrets in output", () => {
  it(
    "the tokens and the database password appear in no log line of serve at trace level, in no answer, for 2xx and 4xx requests",
    { timeout: 120_000 },
    async () => {
      const { url, pool } = await getDb();
      const dir = mkdtempSync(path.join(tmpdir(), "straggler-secrets-"));
      const config = path.join(dir, "pipelines.yaml");
      writeFileSync(config, `pipelines:${servicePipelineYaml("sec", mkdtempSync(path.join(dir, "in-")))}`);
      const service = startServe(await freePort(), {
        DATABASE_URL: await withPassword(pool, url, PASSWORD),
        STRAGGLER_PIPELINES: config,
        STRAGGLER_API_TOKEN: TOKEN,
        STRAGGLER_READ_TOKEN: READ_TOKEN,
        LOG_LEVEL: "trace",
      });
      started.push(service);
      let log = "";
      service.child.stderr!.on("data", (d) => (log += d));
      service.child.stdout!.on("data", (d) => (log += d));
      await service.waitHealthy();
      const write = { authorization: `Bearer ${TOKEN}` };
      const read = { authorization: `Bearer ${READ_TOKEN}` };
      const answers: string[] = [];
      const ask = async (method: string, urlPath: string, headers: Record<string, string>, body?: string) => {
        const r = await service.request(method, urlPath, { headers, body });
        answers.push(r.text);
        return r.status;
      };
      const events = JSON.stringify([{ id: "e1", t: "2026-01-01T00:00:00Z", k: "a", v: 1 }]);
      expect([
        await ask("POST", "/pipelines/sec/events", { ...write, "content-type": "application/json" }, events),
        await ask("GET", "/pipelines/sec/windows", read),
        await ask("GET", "/pipelines", { ...write, cookie: `session=${TOKEN}`, "x-api-key": TOKEN }),
        await ask("GET", "/metrics", read),
        await ask("GET", "/ui/", read),
        await ask("GET", "/pipelines/none/windows", read),
        await ask("GET", "/pipelines/sec/windows?limit=0", write),
        await ask("POST", "/pipelines/sec/events", { ...read, "content-type": "application/json" }, events),
        await ask("POST", "/pipelines/sec/events", { ...write, "content-type": "text/csv" }, "a,b"),
        await ask("GET", "/pipelines/sec/windows", { authorization: "Bearer wrong-token-0000000000" }),
      ]).toEqual([201, 200, 200, 200, 200, 404, 400, 401, 415, 401]);
      // Every request above is logged (debug for /metrics): wait for the last one's line.
      await waitFor(
        "the request log line of the last 401",
        async () => (log.split("\n").filter((l) => /"statusCode":401/.test(l)).length >= 2 ? true : undefined),
        10_000,
      );
      // The request lines of the requests above (waitHealthy's GET /health are logged too, at debug).
      const requestLines = log.split("\n").filter((l) => l.includes('"req":') && !l.includes('"url":"/health"'));
      expect(requestLines.length).toBe(10);
      expect(requestLines.filter((l) => l.includes('"authorization":"[Redacted]"')).length).toBe(10);
      expect(
        requestLines.filter((l) => l.includes('"cookie":"[Redacted]"') && l.includes('"x-api-key":"[Redacted]"'))
          .length,
      ).toBe(1);
      await killAndReap(service, "SIGTERM");
      const all = log + answers.join("\n");
      expect([TOKEN, READ_TOKEN, PASSWORD].filter((s) => all.includes(s))).toEqual([]);
    },
  );

  it(
    "a command that cannot connect names the failure without the database password, in its message and its log",
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "straggler-secrets-"));
      const config = path.join(dir, "pipelines.yaml");
      writeFileSync(config, `pipelines:${servicePipelineYaml("sec", mkdtempSync(path.join(dir, "in-")))}`);
      const port = await freePort(); // nothing listens there
      const r = await startCli(["status", "--json"], {
        DATABASE_URL: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/nothing`,
        STRAGGLER_PIPELINES: config,
        STRAGGLER_LOG_LEVEL: "trace",
      }).done;
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/ECONNREFUSED|connect/);
      expect((r.stdout + r.stderr).includes(PASSWORD)).toBe(false);
      // A password that is percent-encoded in the URL is not written in either form.
      const odd = "p@ss/w:rd-secret%41";
      const r2 = await startCli(["status", "--json"], {
        DATABASE_URL: `postgres://postgres:${encodeURIComponent(odd)}@127.0.0.1:${port}/nothing`,
        STRAGGLER_PIPELINES: config,
        STRAGGLER_LOG_LEVEL: "trace",
      }).done;
      expect(r2.code).toBe(1);
      expect([odd, encodeURIComponent(odd)].filter((s) => (r2.stdout + r2.stderr).includes(s))).toEqual([]);
    },
  );
});
