/**
 * Runs the real CLI as a child process (for restart and end-to-end tests): bin/straggler.mjs,
 * what users run, which runs the compiled dist/ (globalSetup builds it when it is older than src/).
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { REPO_ROOT } from "./fixtures.js";

export interface CliRun {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** How long a CLI run may take before it is killed and its run fails naming it: generous, for a busy machine. */
export const CLI_TIMEOUT_MS = 240_000;

/** The command line of `straggler`, before its arguments: node and bin/straggler.mjs. */
export const CLI = [process.execPath, path.join(REPO_ROOT, "bin/straggler.mjs")] as const;

/**
 * Starts `straggler <args>` with `env` added to the environment. `done` resolves when it exits; a run
 * still going after `timeoutMs` is killed and `done` rejects naming the command and its output so far.
 */
export function startCli(args: string[], env: Record<string, string>, timeoutMs = CLI_TIMEOUT_MS): CliRun {
  const child = spawn(CLI[0], [CLI[1], ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "",
    stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(
          new Error(
            `straggler ${args.join(" ")} did not exit within ${timeoutMs / 1000} s; stdout so far:\n${stdout.slice(-2000)}\nstderr so far:\n${stderr.slice(-2000)}`,
          ),
        );
      }, timeoutMs);
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout, stderr });
      });
    },
  );
  return { child, done };
}

/** Runs `straggler <args>` to the end; throws with its output when it exits non-zero. */
export async function runCli(args: string[], env: Record<string, string>): Promise<string> {
  const r = await startCli(args, env).done;
  if (r.code !== 0) throw new Error(`straggler ${args.join(" ")} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}
