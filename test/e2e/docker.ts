/** Helpers of the end-to-end tests: the docker CLI, compose, polling. */
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The service image under test (see globalSetup.ts). */
export const DEFAULT_SERVICE_IMAGE = "straggler/service:local";
/** The PostgreSQL image: the main suite's variable, else the official image. */
export const PG_IMAGE = process.env.STRAGGLER_TEST_PG_IMAGE ?? process.env.STRAGGLER_PG_IMAGE ?? "postgres:16";

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; never throws (a missing binary is code 127). */
export function run(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      {
        cwd: opts.cwd ?? REPO_ROOT,
        env: opts.env ?? process.env,
        timeout: opts.timeoutMs ?? 600_000,
        maxBuffer: 64 * 2 ** 20,
      },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : err.code === "ENOENT" ? 127 : 1;
        resolve({
          code,
          stdout: String(stdout),
          stderr: String(stderr) || (err && err.code === "ENOENT" ? `${cmd}: not found` : ""),
        });
      },
    );
  });
}

/** Runs a command and returns its stdout; throws with its output when it fails. */
export async function check(cmd: string, args: string[], opts: Parameters<typeof run>[2] = {}): Promise<string> {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.code}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** `docker compose` (v2 plugin) when it works, else `docker-compose` (v1). */
export async function composeCommand(): Promise<[string, ...string[]]> {
  if ((await run("docker", ["compose", "version"])).code === 0) return ["docker", "compose"];
  if ((await run("docker-compose", ["version"])).code === 0) return ["docker-compose"];
  throw new Error(
    "neither `docker compose` nor `docker-compose` works (scripts/docker-local.sh installs Debian's docker-compose)",
  );
}

/**
 * Polls `probe` until `done(value)` holds, every `intervalMs`; fails after
 * `timeoutMs` with the last value seen (or the last error).
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 60_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: { value?: T; error?: unknown } = {};
  for (;;) {
    try {
      const value = await probe();
      if (done(value)) return value;
      last = { value };
    } catch (error) {
      last = { error };
    }
    if (Date.now() > deadline) {
      const seen =
        "error" in last
          ? `last error: ${(last.error as Error)?.message ?? String(last.error)}`
          : `last value: ${JSON.stringify(last.value)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ${seen}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Milliseconds since `t0`, for the timing lines. */
export const since = (t0: number) => Date.now() - t0;
