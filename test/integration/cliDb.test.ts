/**
 * `straggler db url` and `straggler db psql`: the connection string of the
 * configured or embedded database, and psql opened on it (exact output).
 */
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();

/** A TCP port nothing listens on (taken from the OS, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("straggler db url", () => {
  it("prints DATABASE_URL when it is set", async () => {
    const { url } = await getDb();
    const r = await startCli(["db", "url"], { DATABASE_URL: url }).done;
    expect(r).toMatchObject({ code: 0, stdout: `${url}\n`, stderr: "" });
  });

  it("prints the embedded server's URL, and says on stderr that it is not running", async () => {
    const port = await freePort();
    const dataDir = mkdtempSync(path.join(tmpdir(), "straggler-db-url-"));
    const r = await startCli(["db", "url"], {
      DATABASE_URL: "",
      STRAGGLER_EMBEDDED_PORT: String(port),
      STRAGGLER_DATA_DIR: dataDir,
    }).done;
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`postgres://straggler:straggler@127.0.0.1:${port}/straggler\n`);
    expect(r.stderr).toBe(
      `straggler: the embedded PostgreSQL (${dataDir}/pgdata) is not running: it runs only while a straggler command does. ` +
        "Keep it up with `npm start` in another terminal, or use `straggler db psql`, which starts it for the session.\n",
    );
  });
});

describe("straggler db psql", () => {
  it("runs psql on the database with the arguments after --, and exits with psql's code", async () => {
    const { url } = await getDb();
    const ok = await startCli(["db", "psql", "--", "-AtX", "-c", "SELECT count(*) FROM straggler.checkpoints"], {
      DATABASE_URL: url,
    }).done;
    expect(ok).toMatchObject({ code: 0, stdout: "0\n", stderr: "" });
    const bad = await startCli(["db", "psql", "--", "-AtX", "-v", "ON_ERROR_STOP=1", "-c", "SELECT nope"], {
      DATABASE_URL: url,
    }).done;
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toMatch(/^ERROR: {2}column "nope" does not exist\n/);
  });

  it("says plainly that psql is missing instead of a raw ENOENT", async () => {
    const { url } = await getDb();
    const r = await startCli(["db", "psql"], {
      DATABASE_URL: url,
      PATH: mkdtempSync(path.join(tmpdir(), "straggler-no-psql-")),
    }).done;
    expect(r).toMatchObject({
      code: 1,
      stdout: "",
      stderr:
        "straggler: psql is not installed (not found on PATH): install PostgreSQL's client (Debian: apt-get install postgresql-client), " +
        "or connect another client to the URL `straggler db url` prints\n",
    });
  });
});
