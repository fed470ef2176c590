#!/usr/bin/env node
// The `straggler` command: runs the compiled CLI (dist/, `npm run build`; `npm ci` builds it).
// A checkout without a build, or whose src/ or jobs/ changed since it, runs the TypeScript
// sources through tsx instead (slower to start) and says so on stderr: never stale code.
import { readdirSync, statSync } from "node:fs";

const root = new URL("../", import.meta.url);
const builtAt = (() => {
  try {
    return statSync(new URL("dist/build-info.json", root)).mtimeMs;
  } catch {
    return null;
  }
})();

/** True when a file under src/ or jobs/ is newer than the build (no src/, as in the service image: false). */
function changedSince(ms) {
  for (const dir of ["src", "jobs"]) {
    let entries;
    try {
      entries = readdirSync(new URL(`${dir}/`, root), { recursive: true, withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (e.isFile() && statSync(`${e.parentPath ?? e.path}/${e.name}`).mtimeMs > ms) return true;
    }
  }
  return false;
}

if (builtAt !== null && !changedSince(builtAt)) {
  process.setSourceMapsEnabled(true);
  await import("../dist/src/cli/main.js");
} else {
  process.stderr.write(
    `straggler: ${builtAt === null ? "no build in dist/" : "dist/ is older than src/"} (npm run build); running the TypeScript sources through tsx\n`,
  );
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
