/**
 * The compiled CLI that tests spawn (bin/straggler.mjs runs dist/): built once
 * per test run when dist/ is missing or older than a file under src/ or jobs/
 * (the same rule bin/straggler.mjs applies), so no test runs stale code.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "./fixtures.js";

/** Epoch ms of the newest file under `dir` (0 when there is none). */
function newestUnder(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(path.join(REPO_ROOT, dir), { recursive: true, withFileTypes: true })) {
    if (e.isFile()) newest = Math.max(newest, statSync(path.join(e.parentPath, e.name)).mtimeMs);
  }
  return newest;
}

/** True when dist/build-info.json is newer than every file under src/ and jobs/. */
export function buildIsFresh(): boolean {
  let builtAt: number;
  try {
    builtAt = statSync(path.join(REPO_ROOT, "dist/build-info.json")).mtimeMs;
  } catch {
    return false;
  }
  return newestUnder("src") < builtAt && newestUnder("jobs") < builtAt;
}

/** Runs `npm run build` (scripts/build.mjs) unless the build is fresh; throws with its output when it fails. */
export function ensureBuilt(): void {
  if (buildIsFresh()) return;
  execFileSync(process.execPath, [path.join(REPO_ROOT, "scripts/build.mjs")], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (!buildIsFresh())
    throw new Error("npm run build finished but dist/ is still older than src/ (a file changed during the build?)");
}
