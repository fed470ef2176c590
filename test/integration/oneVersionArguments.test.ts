/**
 * Commands and routes that act on one pipeline and one results version, given
 * arguments they cannot serve: `-p all` (it names every pipeline), and a
 * version number beyond the version column's range (a PostgreSQL integer).
 * Each is a usage error (exit 2) or a 400 naming what to write, never a
 * database error, and nothing changes.
 */
import type { Server } from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
import { createLogger } from "../../src/log.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "test-token-0123456789abcdef";
let server: Server | undefined;
afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

const raw = (name: string) => ({
  name,
  source: { format: "jsonl" },
  fields: { eventId: "id", eventTime: "t", value: "v" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "5 minutes" },
});

function pipelinesFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-one-"));
  const file = path.join(dir, "pipelines.json");
  writeFileSync(file, JSON.stringify({ pipelines: [raw("one-a"), raw("one-b")] }));
  return file;
}

describe("one pipeline, one version", () => {
  it("the CLI refuses -p all for a one-pipeline command, and a version beyond 2147483647, with exit 2 and nothing done", async () => {
    const { url } = await getDb();
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: pipelinesFile() };
    const runs = await Promise.all([
      startCli(["cutover", "-p", "all", "--to", "2"], env).done,
      startCli(["hold", "-p", "all", "--reason", "x"], env).done,
      startCli(["cutover", "-p", "one-a", "--to", "3000000000"], env).done,
      startCli(["rebuild", "-p", "one-a", "--drop", "1e3"], env).done,
    ]);
    expect(runs.map((r) => [r.code, r.stdout, r.stderr.trim()])).toEqual([
      [2, "", "straggler: -p all names every pipeline; this command acts on one: name it (configured: one-a, one-b)"],
      [2, "", "straggler: -p all names every pipeline; this command acts on one: name it (configured: one-a, one-b)"],
      [2, "", 'straggler: --to: expected a version number (1, 2, … up to 2147483647), got "3000000000"'],
      [2, "", 'straggler: --drop: expected a version number (1, 2, … up to 2147483647), got "1e3"'],
    ]);
    const { pool } = await getDb();
    const holds = await pool.query(
      "SELECT count(*)::int AS n FROM straggler.holds WHERE pipeline IN ('one-a', 'one-b')",
    );
    expect(holds.rows[0].n).toBe(0);
  }, 300_000);

  it("POST /pipelines/{p}/cutover answers 400 for a version beyond 2147483647 and 404 at the bound; the candidate stays as it was", async () => {
    const { pool } = await getDb();
    const p = pipeline(raw("one-http"));
    const built = await rebuild(pool, p);
    const app = createApp({ pool, pipelines: [p], log: createLogger("silent"), token: TOKEN });
    const base = await new Promise<string>((resolve) => {
      const s = app.listen(0, "127.0.0.1", () => {
        server = s;
        const a = s.address();
        resolve(`http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`);
      });
    });
    const post = async (body: string) => {
      const r = await fetch(`${base}/pipelines/one-http/cutover`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body,
      });
      return [r.status, await r.json()];
    };
    expect(await post('{"to":3000000000}')).toEqual([
      400,
      { error: "invalid_request", message: "body.to: expected a version number (1, 2, … up to 2147483647)" },
    ]);
    expect(await post('{"to":2147483648}')).toEqual([
      400,
      { error: "invalid_request", message: "body.to: expected a version number (1, 2, … up to 2147483647)" },
    ]);
    expect(await post('{"to":2147483647}')).toEqual([
      404,
      { error: "not_found", message: "pipeline one-http has no version 2147483647" },
    ]);
    const states = await pool.query(
      "SELECT version, state FROM straggler.policy_versions WHERE pipeline = 'one-http' ORDER BY version",
    );
    expect(states.rows).toEqual([{ version: built.version, state: "candidate" }]);
  });
});
