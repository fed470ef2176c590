#!/usr/bin/env node
/**
 * `npm run build` (and `prepare`, which `npm ci` runs): compiles src/ and jobs/
 * to JavaScript under dist/ (dist/src/…, dist/jobs/…, the same layout), one
 * module per file with its source map (pointing at src/ and jobs/, which stay
 * beside dist/, also in the service image: the maps carry no copy of the
 * sources, which keeps them small to load), and copies the UI's static assets
 * beside the compiled page code. esbuild only strips the types (a second or
 * less); `npm run typecheck` checks them. esbuild comes with tsx, a runtime
 * dependency, so a production install (`npm ci --omit=dev`) can build too.
 *
 * Without src/ (the Docker image's dependency layer, installed before the
 * sources are copied) there is nothing to build: it says so and exits 0.
 * Writes dist/build-info.json last: bin/straggler.mjs runs dist/ only when that
 * file is newer than every file under src/ and jobs/.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist");

/** esbuild as tsx resolves it (hoisted to node_modules/esbuild by npm, or nested under tsx). */
async function loadEsbuild() {
  try {
    return await import("esbuild");
  } catch {
    const fromTsx = createRequire(createRequire(path.join(root, "package.json")).resolve("tsx/package.json"));
    return await import(fromTsx.resolve("esbuild"));
  }
}

/** Every .ts file under `dir` (relative to the repository), declarations excluded. */
function tsFiles(dir) {
  return readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts"))
    .map((e) => path.relative(root, path.join(e.parentPath ?? e.path, e.name)));
}

if (!existsSync(path.join(root, "src"))) {
  console.error("build: no src/ here; nothing to build");
  process.exit(0);
}

const started = Date.now();
const esbuild = await loadEsbuild();
const entryPoints = [...tsFiles("src"), ...(existsSync(path.join(root, "jobs")) ? tsFiles("jobs") : [])];
rmSync(dist, { recursive: true, force: true });
await esbuild.build({
  absWorkingDir: root,
  entryPoints,
  outdir: dist,
  outbase: root,
  bundle: false,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: "linked",
  sourcesContent: false,
  logLevel: "warning",
});
// The page's static files, read at run time next to the compiled routes (src/ui/routes.ts).
const assets = path.join(root, "src/ui/assets");
if (existsSync(assets)) cpSync(assets, path.join(dist, "src/ui/assets"), { recursive: true });
mkdirSync(dist, { recursive: true });
writeFileSync(
  path.join(dist, "build-info.json"),
  JSON.stringify({ builtAt: new Date().toISOString(), modules: entryPoints.length }) + "\n",
);
console.error(`build: ${entryPoints.length} modules compiled to dist/ in ${Date.now() - started} ms`);
