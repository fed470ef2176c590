/**
 * The start-up sweep of spool folders left by killed processes
 * (src/ingest/spoolFolders.ts): only folders named by the spool prefixes,
 * older than the age limit in every entry, whose process is gone.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { spoolPrefix, STALE_SPOOL_MS, sweepStaleSpools } from "../../src/ingest/spoolFolders.js";

const DIR = mkdtempSync(path.join(tmpdir(), "spool-sweep-test-"));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

const NOW = Date.UTC(2026, 0, 1, 12, 0);
const DEAD = 4_000_001,
  LIVE = 4_000_002;
const alive = (pid: number) => pid === LIVE;

/** A folder `name` holding one file, both last modified `ageMs` before NOW (the file `fileAgeMs` before, when given). */
function folder(name: string, ageMs: number, fileAgeMs = ageMs): void {
  const dir = path.join(DIR, name);
  mkdirSync(dir);
  writeFileSync(path.join(dir, "body"), "{}\n");
  utimesSync(path.join(dir, "body"), (NOW - fileAgeMs) / 1000, (NOW - fileAgeMs) / 1000);
  utimesSync(dir, (NOW - ageMs) / 1000, (NOW - ageMs) / 1000);
}

describe("sweepStaleSpools", () => {
  it("removes old folders of ended processes and earlier releases' unnamed ones; keeps live, young, still-written and foreign entries", async () => {
    const old = STALE_SPOOL_MS + 1000,
      young = STALE_SPOOL_MS - 1000;
    folder(`straggler-body-${DEAD}-aB3xY9`, old); // removed
    folder(`straggler-spool-${DEAD}-Qw12Er`, old); // removed
    folder("straggler-body-Zx98Cv", old); // an earlier release's name, no pid: removed by age
    folder(`straggler-body-${LIVE}-Kk11Ll`, old); // its process still runs: kept
    folder(`straggler-body-${process.pid}-Mm22Nn`, old); // this process's own: kept
    folder(`straggler-spool-${DEAD}-Yy33Uu`, young); // younger than an hour: kept
    folder(`straggler-spool-${DEAD}-Ii44Oo`, old, young); // its file was written less than an hour ago: kept
    folder("straggler-migrations-Pp55Aa", old); // not a spool folder: kept
    folder("straggler-body-notours-x", old); // not mkdtemp's shape: kept
    writeFileSync(path.join(DIR, `straggler-body-${DEAD}-Ss66Dd`), "a file, not a folder"); // kept
    utimesSync(path.join(DIR, `straggler-body-${DEAD}-Ss66Dd`), (NOW - old) / 1000, (NOW - old) / 1000);

    const removed = await sweepStaleSpools({ dir: DIR, nowMs: NOW, alive });
    expect(removed.sort()).toEqual(
      [`straggler-body-${DEAD}-aB3xY9`, "straggler-body-Zx98Cv", `straggler-spool-${DEAD}-Qw12Er`].sort(),
    );
    expect(readdirSync(DIR).sort()).toEqual(
      [
        `straggler-body-${LIVE}-Kk11Ll`,
        `straggler-body-${process.pid}-Mm22Nn`,
        `straggler-spool-${DEAD}-Yy33Uu`,
        `straggler-spool-${DEAD}-Ii44Oo`,
        "straggler-migrations-Pp55Aa",
        "straggler-body-notours-x",
        `straggler-body-${DEAD}-Ss66Dd`,
      ].sort(),
    );
    // A second sweep finds nothing more; a missing folder is no error.
    expect(await sweepStaleSpools({ dir: DIR, nowMs: NOW, alive })).toEqual([]);
    expect(await sweepStaleSpools({ dir: path.join(DIR, "absent"), nowMs: NOW, alive })).toEqual([]);
  });

  it("the spool prefixes carry the process id, the shape the sweep reads", () => {
    expect(path.basename(spoolPrefix("body", 123))).toBe("straggler-body-123-");
    expect(path.basename(spoolPrefix("spool"))).toBe(`straggler-spool-${process.pid}-`);
  });
});
