/**
 * The embedded PostgreSQL's settings (src/db/embedded.ts): started by Straggler, it reads with
 * `io_method = sync`, not PostgreSQL 18's default I/O workers (which made the correction's reads of the
 * touched windows 2.8 × slower: BENCHMARKS.md "Issue 30, round nine").
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { startEmbeddedPostgres } from "../../src/db/embedded.js";
import { createLogger } from "../../src/log.js";
import { freePort } from "../helpers/service.js";

describe("the embedded PostgreSQL", () => {
  it("runs with io_method = sync", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-embedded-settings-"));
    // As root the server runs as its own OS user (src/db/embedded.ts), which must reach the folder.
    chmodSync(dir, 0o755);
    const db = await startEmbeddedPostgres(dir, await freePort(), createLogger("silent"));
    const client = new pg.Client({ connectionString: db.url });
    try {
      await client.connect();
      const { rows } = await client.query("SHOW io_method");
      expect(rows).toEqual([{ io_method: "sync" }]);
    } finally {
      await client.end().catch(() => undefined);
      await db.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
