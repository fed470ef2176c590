/**
 * What a landing pass considers in a pipeline's landing folder: the folder checked, its entries of the
 * format's extensions (and of the subfolders named after declared inputs), which are plain files, and the
 * input each belongs to. src/ingest/landingFolder.ts lands them.
 */
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { PipelineConfig } from "../config/pipelines.js";
import { LandingDirMissing } from "./errors.js";

const EXTENSIONS: Record<PipelineConfig["source"]["format"], string[]> = {
  csv: [".csv"],
  jsonl: [".json", ".jsonl", ".ndjson"],
};

/**
 * The folder of `pipeline`'s landing folder, checked; undefined for a pipeline without one (fed over HTTP or stdin).
 * @throws LandingDirMissing when it is configured but does not exist or is not a folder
 */
async function landingDirOf(pipeline: PipelineConfig): Promise<string | undefined> {
  const dir = pipeline.source.landingDir;
  if (dir === undefined) return undefined;
  try {
    if (!(await stat(dir)).isDirectory()) throw new LandingDirMissing(dir, "is not a folder");
  } catch (e) {
    if (e instanceof LandingDirMissing) throw e;
    throw new LandingDirMissing(
      dir,
      (e as NodeJS.ErrnoException).code === "ENOENT" ? "does not exist" : `cannot be read: ${(e as Error).message}`,
      { cause: e },
    );
  }
  return dir;
}

/**
 * Entries of the landing folder that a landing pass considers, sorted by
 * name: the format's extensions, not starting with `.` or `_` (in-progress or
 * private: write a file under such a name, then rename it). The entries of a
 * subfolder named after a declared input (`watermark.inputs`; a real folder,
 * not a symlink) are listed as `<input>/<name>`: they land as that input; any other
 * subfolder (not `.`/`_`) is listed as `<folder>/` with a `refusal` saying its files are not landed. `regular` is
 * false for anything that is not a plain file (folder, symlink, FIFO, socket,
 * device): those are refused, never read, so a pass never reads outside the
 * folder and never blocks.
 * @throws LandingDirMissing
 */
export async function scanLandingDir(
  pipeline: PipelineConfig,
): Promise<{ name: string; regular: boolean; refusal?: string }[]> {
  const dir = await landingDirOf(pipeline);
  if (dir === undefined) return []; // no landing folder: a landing pass has nothing to do
  const considered = (name: string) =>
    !/^[._]/.test(name) && EXTENSIONS[pipeline.source.format].includes(path.extname(name).toLowerCase());
  const inputs = new Set(Object.keys(pipeline.watermark.inputs ?? {}));
  const found: { name: string; regular: boolean; refusal?: string }[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory() && inputs.has(e.name)) {
      const inner = await readdir(path.join(dir, e.name), { withFileTypes: true }).catch(
        (err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? [] : Promise.reject(err)),
      );
      for (const f of inner) if (considered(f.name)) found.push({ name: `${e.name}/${f.name}`, regular: f.isFile() });
    } else if (considered(e.name)) found.push({ name: e.name, regular: e.isFile() });
    else if (e.isDirectory() && !/^[._]/.test(e.name)) {
      // A subfolder that is no declared input (day1/, day2/): its files would never land, and nothing would say so.
      const declared = [...inputs].sort();
      found.push({
        name: `${e.name}/`,
        regular: false,
        refusal:
          `a subfolder that is not an input declared in watermark.inputs (${declared.length > 0 ? `declared: ${declared.join(", ")}` : "none declared"}): ` +
          `its files are not landed; move them into the landing folder under names of their own, or declare the input`,
      });
    }
  }
  return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The input of a landing-folder entry's name: `<input>/<file>` is that input's; a file of the folder itself is the default input's (undefined). */
export function inputOfEntry(name: string): string | undefined {
  const slash = name.indexOf("/");
  return slash < 0 ? undefined : name.slice(0, slash);
}

/** Names of the plain files a landing pass considers, sorted. @throws LandingDirMissing */
export async function listLandingFiles(pipeline: PipelineConfig): Promise<string[]> {
  return (await scanLandingDir(pipeline)).filter((e) => e.regular).map((e) => e.name);
}
