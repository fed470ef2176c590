/**
 * bin/straggler.mjs runs the compiled dist/ only when it is fresh: a checkout
 * without a build, or whose sources changed after it, runs the TypeScript
 * through tsx and says so on stderr — never stale code. Each case runs in a
 * copy of the repository's bin/, src/ and jobs/ (and dist/ when the case has one).
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, symlinkSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/fixtures.js";

/** A copy of the checkout: bin/, src/, jobs/, package.json, node_modules linked, and dist/ when `withDist`. */
function checkout(withDist: boolean): string {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-bin-"));
  for (const p of ["bin", "src", "jobs", "package.json", ...(withDist ? ["dist"] : [])])
    cpSync(path.join(REPO_ROOT, p), path.join(dir, p), { recursive: true });
  symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(dir, "node_modules"));
  return dir;
}

const help = (dir: string) =>
  spawnSync(process.execPath, [path.join(dir, "bin/straggler.mjs"), "--help"], {
    cwd: dir,
    encoding: "utf8",
    timeout: 60_000,
  });
const FIRST_LINE = "Usage: straggler [options] [command]";

describe("bin/straggler.mjs", () => {
  it("runs dist/ when it is newer than every source: nothing on stderr", () => {
    const dir = checkout(true);
    const old = new Date(Date.now() - 3_600_000);
    for (const f of ["src/cli/main.ts", "jobs/correct.ts"]) utimesSync(path.join(dir, f), old, old);
    const r = help(dir);
    expect([r.status, r.stdout.split("\n")[0], r.stderr]).toEqual([0, FIRST_LINE, ""]);
  });

  it("without dist/, runs the sources through tsx and says so", () => {
    const r = help(checkout(false));
    expect([r.status, r.stdout.split("\n")[0], r.stderr]).toEqual([
      0,
      FIRST_LINE,
      "straggler: no build in dist/ (npm run build); running the TypeScript sources through tsx\n",
    ]);
  });

  it("with a source changed after the build, runs the sources through tsx and says so", () => {
    const dir = checkout(true);
    const later = new Date(Date.now() + 60_000);
    utimesSync(path.join(dir, "src/cli/print.ts"), later, later);
    const r = help(dir);
    expect([r.status, r.stdout.split("\n")[0], r.stderr]).toEqual([
      0,
      FIRST_LINE,
      "straggler: dist/ is older than src/ (npm run build); running the TypeScript sources through tsx\n",
    ]);
  });
});
