/**
 * Liveness and readiness (src/http/healthRoutes.ts, docs/containers.md "Probes"): `/livez` is 200
 * while the process serves HTTP, whatever the database does; `/readyz` is 200 only when the
 * database answers and every migration is applied, else 503 with the reason. And the service as a
 * container runs it: secrets from `_FILE` variables, logs on stdout.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readiness } from "../../src/http/healthRoutes.js";
import { createLogger } from "../../src/log.js";
import { MIGRATIONS_DIR, readJournalMigrations, runMigrationsKeeping } from "../../src/db/migrate.js";
import { createPool } from "../../src/db/pool.js";
import { startApi } from "../helpers/api.js";
import { useTestDatabase, withFreshDatabase } from "../helpers/db.js";
import { servicePipelineYaml } from "../helpers/fixtures.js";
import { freePort, startServe, type ServeProcess } from "../helpers/service.js";

const getDb = useTestDatabase();
const journal = readJournalMigrations(MIGRATIONS_DIR).map((m) => ({ tag: m.tag, folderMillis: m.folderMillis }));
const started: ServeProcess[] = [];
afterAll(async () => {
  for (const s of started) {
    s.child.kill("SIGTERM");
    await s.exited;
  }
});

async function get(base: string, route: string): Promise<{ status: number; retryAfter: string | null; body: unknown }> {
  const r = await fetch(`${base}${route}`);
  return { status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.json() };
}

describe("GET /livez and GET /readyz", () => {
  it("a migrated database: both 200", async () => {
    const { pool } = await getDb();
    const api = await startApi({ pool, pipelines: [], log: createLogger("silent"), token: undefined });
    try {
      expect(await get(api.base, "/livez")).toEqual({ status: 200, retryAfter: null, body: { status: "ok" } });
      expect(await get(api.base, "/readyz")).toEqual({
        status: 200,
        retryAfter: null,
        body: { status: "ready", database: "reachable", migrations: "applied", pending: [] },
      });
    } finally {
      await api.close();
    }
  });

  it("a database missing the newest migration: /readyz 503 naming it, /livez 200", async () => {
    await withFreshDatabase(async (pool) => {
      const newest = journal.at(-1)!.tag;
      await runMigrationsKeeping(pool, (idx) => idx < Number(newest.slice(0, 4)));
      const api = await startApi({ pool, pipelines: [], log: createLogger("silent"), token: undefined });
      try {
        expect(await get(api.base, "/readyz")).toEqual({
          status: 503,
          retryAfter: "5",
          body: {
            status: "not_ready",
            database: "reachable",
            migrations: "pending",
            pending: [newest],
            reason: "1 migration(s) not applied: run `straggler migrate` (the service applies them when it starts)",
          },
        });
        expect(await get(api.base, "/livez")).toEqual({ status: 200, retryAfter: null, body: { status: "ok" } });
      } finally {
        await api.close();
      }
    });
  });

  it("a database never migrated: every migration pending", async () => {
    await withFreshDatabase(async (pool) => {
      const r = await readiness(pool, journal);
      expect([r.status, r.migrations, r.pending.length, r.pending[0], r.pending.at(-1)]).toEqual([
        "not_ready",
        "pending",
        journal.length,
        "0000_init",
        journal.at(-1)!.tag,
      ]);
    });
  });

  it("a database that does not answer: /readyz 503 unreachable, /livez still 200", async () => {
    const port = await freePort();
    const pool = createPool(`postgres://postgres@127.0.0.1:${port}/none`, 1);
    pool.on("error", () => undefined);
    const api = await startApi({ pool, pipelines: [], log: createLogger("silent"), token: undefined });
    try {
      expect(await get(api.base, "/readyz")).toEqual({
        status: 503,
        retryAfter: "5",
        body: {
          status: "not_ready",
          database: "unreachable",
          migrations: "unknown",
          pending: [],
          reason: `the database does not answer: connect ECONNREFUSED 127.0.0.1:${port}`,
        },
      });
      expect(await get(api.base, "/livez")).toEqual({ status: 200, retryAfter: null, body: { status: "ok" } });
      expect(await get(api.base, "/health")).toEqual({
        status: 503,
        retryAfter: "5",
        body: { status: "unhealthy", database: "unreachable" },
      });
    } finally {
      await api.close();
      await pool.end();
    }
  });
});

describe("straggler serve as a container runs it", () => {
  it("reads DATABASE_URL_FILE and STRAGGLER_API_TOKEN_FILE, logs JSON on stdout only, and answers /livez and /readyz", async () => {
    const { url } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-probes-"));
    const token = "file-token-0123456789abcdef";
    writeFileSync(path.join(dir, "database-url"), `${url}\n`);
    writeFileSync(path.join(dir, "api-token"), `${token}\n`);
    const config = path.join(dir, "pipelines.yaml");
    writeFileSync(config, `pipelines:${servicePipelineYaml("probed", mkdtempSync(path.join(dir, "in-")))}`);
    const service = startServe(await freePort(), {
      DATABASE_URL: "",
      DATABASE_URL_FILE: path.join(dir, "database-url"),
      STRAGGLER_API_TOKEN_FILE: path.join(dir, "api-token"),
      STRAGGLER_PIPELINES: config,
      LOG_LEVEL: "info",
    });
    started.push(service);
    let stdout = "";
    let stderr = "";
    service.child.stdout!.on("data", (d) => (stdout += d));
    service.child.stderr!.on("data", (d) => (stderr += d));
    await service.waitHealthy();
    expect([(await service.request("GET", "/livez")).status, (await service.request("GET", "/readyz")).status]).toEqual(
      [200, 200],
    );
    const denied = await service.request("POST", "/pipelines/probed/release", {
      headers: { authorization: "Bearer wrong-token-0123456789" },
    });
    const allowed = await service.request("POST", "/pipelines/probed/release", {
      headers: { authorization: `Bearer ${token}` },
    });
    expect([denied.status, allowed.status]).toEqual([401, 409]);
    // /health answers before the service's last start-up step logs its line: wait for it (at most 30 s).
    for (const until = Date.now() + 30_000; !stdout.includes("service started") && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 50));
    const lines = stdout.split("\n").filter((l) => l !== "");
    const messages = lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages).toContain("straggler service started");
    expect(stderr).toBe("");
    expect(stdout).not.toContain(token);
  });
});
