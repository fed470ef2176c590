/**
 * A file source is known by its name (`landed_sources`, `source_files`): the same bytes given again
 * are skipped (exit 0); a different file under a name that has landed (day2/r.csv after day1/r.csv,
 * both "r.csv") is refused by name with the reason and a non-zero exit, nothing landed and the
 * landed file's record kept. The landing folder says so of subfolders that are no declared input
 * (their files would never land), lands those that are, each file under `<input>/<name>`; a replay of
 * two files sharing a name is refused before anything is staged.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();
const DIR = mkdtempSync(path.join(tmpdir(), "straggler-names-"));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

const DAY1 = "id,t,amount\nd1a,2024-01-15T12:01:00Z,10\nd1b,2024-01-15T12:02:00Z,20\n";
const DAY2 = "id,t,amount\nd2a,2024-01-16T12:01:00Z,5\n";
let n = 0;

function setup(inputs: string[] = []) {
  const dir = path.join(DIR, `case-${++n}`);
  const landing = path.join(dir, "landing");
  mkdirSync(landing, { recursive: true });
  for (const day of ["day1", "day2"]) mkdirSync(path.join(dir, day));
  writeFileSync(path.join(dir, "day1", "r.csv"), DAY1);
  writeFileSync(path.join(dir, "day2", "r.csv"), DAY2);
  const name = `names-${n}`;
  const config = path.join(dir, "pipelines.yaml");
  const declared = inputs.length === 0 ? "" : `, inputs: { ${inputs.map((i) => `${i}: {}`).join(", ")} }`;
  writeFileSync(
    config,
    `pipelines:
  - name: ${name}
    source: { landingDir: landing, format: csv, settle: 0 seconds }
    fields: { eventId: id, eventTime: t, value: amount }
    window: { type: tumbling, size: 1 hour }
    watermark: { delay: 1 hour${declared} }
    admission: { maxFutureSkew: null }
`,
  );
  return { dir, landing, name, config };
}

async function sources(pool: Pool, name: string) {
  return (
    await pool.query(
      "SELECT source, state, rows::int, reason FROM straggler.sources WHERE pipeline = $1 ORDER BY source",
      [name],
    )
  ).rows;
}
async function eventIds(pool: Pool, name: string) {
  return (
    await pool.query("SELECT event_id, source FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq", [name])
  ).rows.map((r) => `${r.source}:${r.event_id}`);
}

describe("straggler ingest -p P file: a source's name and its bytes", () => {
  it("the same bytes again are skipped (exit 0); day2/r.csv after day1/r.csv is refused by name, exit 1, nothing landed, r.csv's record kept", async () => {
    const { url, pool } = await getDb();
    const c = setup();
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: c.config };
    const run = (...args: string[]) => startCli(["ingest", "-p", c.name, ...args], env).done;
    const day1 = path.join(c.dir, "day1", "r.csv"),
      day2 = path.join(c.dir, "day2", "r.csv");

    const first = await run(day1);
    expect([first.code, first.stdout.trim(), first.stderr]).toEqual([
      0,
      `${c.name}: 1 source landed (2 rows: 2 accepted, 0 quarantined)\n${c.name}: r.csv: landed 2, accepted 2, quarantined 0`,
      "",
    ]);
    const again = await run(day1);
    expect([again.code, again.stdout.trim(), again.stderr]).toEqual([
      0,
      `${c.name}: 0 sources landed, 1 already landed\n${c.name}: r.csv already landed; skipped`,
      "",
    ]);

    const other = await run(day2);
    const reason =
      `a different file named r.csv has already landed (${DAY1.length} bytes, SHA-256 ${sha(DAY1).slice(0, 12)}…; ` +
      `${day2} has ${DAY2.length} bytes, SHA-256 ${sha(DAY2).slice(0, 12)}…): nothing was landed. A file source is known by its name: ` +
      `give this file a name of its own (e.g. a date in it) and land it again`;
    expect([other.code, other.stdout, other.stderr.trim()]).toEqual([
      1,
      `${c.name}: 0 sources landed, 1 refused\n`,
      `${c.name}: ${day2} refused: ${reason}`,
    ]);
    const json = await run(day2, "--json");
    expect([json.code, JSON.parse(json.stdout).refused, JSON.parse(json.stdout).landed]).toEqual([
      1,
      [{ source: day2, reason }],
      [],
    ]);

    // The ledger: day 1's two events only; r.csv is still the landed day-1 file.
    expect(await eventIds(pool, c.name)).toEqual(["r.csv:d1a", "r.csv:d1b"]);
    expect(await sources(pool, c.name)).toEqual([{ source: "r.csv", state: "landed", rows: 2, reason: null }]);
    const file = await pool.query("SELECT sha256 FROM straggler.source_files WHERE pipeline = $1 AND name = 'r.csv'", [
      c.name,
    ]);
    expect(file.rows).toEqual([{ sha256: sha(DAY1) }]);

    // Under a name of its own, day 2 lands.
    const renamed = path.join(c.dir, "day2", "r-2024-01-16.csv");
    writeFileSync(renamed, DAY2);
    const landed = await run(renamed);
    expect([landed.code, landed.stdout.trim()]).toEqual([
      0,
      `${c.name}: 1 source landed (1 rows: 1 accepted, 0 quarantined)\n${c.name}: r-2024-01-16.csv: landed 1, accepted 1, quarantined 0`,
    ]);
  });

  it("both files in one command: the first lands, the second is refused, exit 1", async () => {
    const { url, pool } = await getDb();
    const c = setup();
    const r = await startCli(
      ["ingest", "-p", c.name, path.join(c.dir, "day1", "r.csv"), path.join(c.dir, "day2", "r.csv")],
      { DATABASE_URL: url, STRAGGLER_PIPELINES: c.config },
    ).done;
    expect(r.code).toBe(1);
    expect(r.stdout.trim()).toBe(
      `${c.name}: 1 source landed (2 rows: 2 accepted, 0 quarantined), 1 refused\n${c.name}: r.csv: landed 2, accepted 2, quarantined 0`,
    );
    expect(r.stderr).toContain(
      `${c.name}: ${path.join(c.dir, "day2", "r.csv")} refused: a different file named r.csv has already landed`,
    );
    expect(await eventIds(pool, c.name)).toEqual(["r.csv:d1a", "r.csv:d1b"]);
  });
});

describe("the landing folder's subfolders", () => {
  it("subfolders that are no declared input are refused by name (exit 1), their files not landed in silence", async () => {
    const { url, pool } = await getDb();
    const c = setup();
    for (const day of ["day1", "day2"]) {
      mkdirSync(path.join(c.landing, day));
      writeFileSync(path.join(c.landing, day, "r.csv"), day === "day1" ? DAY1 : DAY2);
    }
    mkdirSync(path.join(c.landing, "_done")); // private: not considered
    const r = await startCli(["ingest", "-p", c.name], { DATABASE_URL: url, STRAGGLER_PIPELINES: c.config }).done;
    const reason =
      "a subfolder that is not an input declared in watermark.inputs (none declared): its files are not landed; move them into the landing folder under names of their own, or declare the input";
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toEqual([
      `${c.name}: day1/ refused: ${reason}`,
      `${c.name}: day2/ refused: ${reason}`,
    ]);
    expect(await sources(pool, c.name)).toEqual([
      { source: "day1/", state: "refused", rows: 0, reason },
      { source: "day2/", state: "refused", rows: 0, reason },
    ]);
    expect(await eventIds(pool, c.name)).toEqual([]);
  });

  it("subfolders declared as inputs land each file under <input>/<name>: day1/r.csv and day2/r.csv are two sources", async () => {
    const { url, pool } = await getDb();
    const c = setup(["day1", "day2"]);
    for (const day of ["day1", "day2"]) {
      mkdirSync(path.join(c.landing, day));
      writeFileSync(path.join(c.landing, day, "r.csv"), day === "day1" ? DAY1 : DAY2);
    }
    const r = await startCli(["ingest", "-p", c.name], { DATABASE_URL: url, STRAGGLER_PIPELINES: c.config }).done;
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(await eventIds(pool, c.name)).toEqual(["day1/r.csv:d1a", "day1/r.csv:d1b", "day2/r.csv:d2a"]);
  });
});

describe("the landing folder: a landed file whose bytes changed", () => {
  it("is reported changed after landing on stderr with exit 1 by the pass that finds it; later passes say nothing new (exit 0)", async () => {
    const { url, pool } = await getDb();
    const c = setup();
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: c.config };
    writeFileSync(path.join(c.landing, "r.csv"), DAY1);
    const first = await startCli(["ingest", "-p", c.name], env).done;
    expect([first.code, first.stderr]).toEqual([0, ""]);
    writeFileSync(path.join(c.landing, "r.csv"), DAY1 + "d1c,2024-01-15T12:03:00Z,30\n");
    const changed = await startCli(["ingest", "-p", c.name], env).done;
    expect([changed.code, changed.stderr.trim()]).toEqual([
      1,
      `${c.name}: r.csv changed after landing; not landed again (see straggler sources)`,
    ]);
    const later = await startCli(["ingest", "-p", c.name], env).done;
    expect([later.code, later.stderr]).toEqual([0, ""]);
    expect(await eventIds(pool, c.name)).toEqual(["r.csv:d1a", "r.csv:d1b"]);
    expect((await sources(pool, c.name)).map((r) => [r.source, r.state])).toEqual([["r.csv", "changed_after_landing"]]);
  });
});

describe("replay of two files sharing a name", () => {
  it("is refused before anything is staged, exit 2, naming both", async () => {
    const { url, pool } = await getDb();
    const c = setup();
    const day1 = path.join(c.dir, "day1", "r.csv"),
      day2 = path.join(c.dir, "day2", "r.csv");
    const r = await startCli(["replay", "-p", c.name, "--arrival-field", "t", "--batch-span", "1 hour", day1, day2], {
      DATABASE_URL: url,
      STRAGGLER_PIPELINES: c.config,
    }).done;
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `replay refused, nothing staged: ${day1} and ${day2} share the name r.csv, which is a file source's name (its made-up event ids are r.csv:<line>): give each file a name of its own`,
    );
    expect(await eventIds(pool, c.name)).toEqual([]);
  });
});

function sha(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
