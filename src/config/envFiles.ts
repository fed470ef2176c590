/**
 * Secrets from files (`DATABASE_URL_FILE`, `STRAGGLER_API_TOKEN_FILE`, `STRAGGLER_READ_TOKEN_FILE`),
 * as Docker and Kubernetes secrets mount them (`/run/secrets/<name>`), the convention of the
 * official postgres image's `POSTGRES_PASSWORD_FILE`. The file's text is the value, less one
 * trailing newline (`\n` or `\r\n`, as `echo` or an editor leaves it). The value itself is never in
 * an error message: only the variable and the file's path are.
 */
import { readFileSync } from "node:fs";
import { ConfigError } from "./pipelines.js";

/** The variables that may be given as `<NAME>_FILE`. */
const FILE_VARIABLES = ["DATABASE_URL", "STRAGGLER_API_TOKEN", "STRAGGLER_READ_TOKEN"] as const;

/** Why a file could not be read, in words, by its Node error code. */
function unreadable(e: NodeJS.ErrnoException): string {
  switch (e.code) {
    case "ENOENT":
      return "no such file";
    case "EACCES":
    case "EPERM":
      return "permission denied (the service runs as user node, uid 1000, in the image)";
    case "EISDIR":
      return "a directory, not a file";
    default:
      return e.code ?? e.message;
  }
}

/**
 * `env` (empty values already removed) with each `<NAME>_FILE` of `FILE_VARIABLES` replaced by
 * `<NAME>` holding the file's text less one trailing newline; `env` itself is not changed.
 * @throws ConfigError when both `<NAME>` and `<NAME>_FILE` are set, the file cannot be read, or it
 *   is empty (after the newline is removed); the message names the variable and the path only
 */
export function readEnvFiles(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const out = { ...env };
  const problems: string[] = [];
  for (const name of FILE_VARIABLES) {
    const fileVar = `${name}_FILE`;
    const file = env[fileVar];
    if (file === undefined) continue;
    delete out[fileVar];
    if (env[name] !== undefined) {
      problems.push(`  ${fileVar}: set ${name} or ${fileVar}, not both`);
      continue;
    }
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      problems.push(`  ${fileVar}: cannot read ${file}: ${unreadable(e as NodeJS.ErrnoException)}`);
      continue;
    }
    const value = text.replace(/\r?\n$/, "");
    if (value === "") problems.push(`  ${fileVar}: ${file} is empty`);
    else out[name] = value;
  }
  if (problems.length > 0) throw new ConfigError(`invalid environment:\n${problems.join("\n")}`);
  return out;
}
