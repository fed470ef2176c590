/**
 * A file of the repository generated from the code (docs/rest-reference.md, docs/cli-reference.md):
 * written, or with `--check` compared, by the script that makes it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface GeneratedFile {
  /** Its path from the repository's root. */
  file: string;
  /** What it is made from, in words, for the message when it is stale. */
  source: string;
  /** The command that writes it. */
  command: string;
}

/**
 * Writes `text` to `g.file` under `root`, or with `check` compares the file with it.
 * @returns the message to print and the exit code (1: the file is missing or stale)
 */
export function writeOrCheckFile(
  root: string,
  g: GeneratedFile,
  text: string,
  check: boolean,
): { message: string; code: number } {
  const file = path.join(root, g.file);
  if (!check) {
    writeFileSync(file, text);
    return { message: `wrote ${g.file}`, code: 0 };
  }
  let written: string | undefined;
  try {
    written = readFileSync(file, "utf8");
  } catch {
    written = undefined;
  }
  if (written === text) return { message: `${g.file} is up to date`, code: 0 };
  return {
    message: `${g.file} is ${written === undefined ? "missing" : `stale (it differs from ${g.source})`}: run \`${g.command}\``,
    code: 1,
  };
}

/** Runs `writeOrCheck` (with `--check` when given) when `moduleUrl` is the script node was started with. */
export function runWhenMain(
  moduleUrl: string,
  writeOrCheck: (root: string, check: boolean) => { message: string; code: number },
): void {
  if (process.argv[1] === undefined || path.resolve(process.argv[1]) !== fileURLToPath(moduleUrl)) return;
  const { message, code } = writeOrCheck(
    path.resolve(path.dirname(fileURLToPath(moduleUrl)), ".."),
    process.argv.includes("--check"),
  );
  (code === 0 ? console.log : console.error)(message);
  process.exitCode = code;
}
