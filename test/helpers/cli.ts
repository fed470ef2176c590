/** Runs the real CLI as a child process (for restart and end-to-end tests). */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { REPO_ROOT } from "./fixtures.js";

export interface CliRun {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** Starts `straggler <args>` with `env` added to the environment. */
export function startCli(args: string[], env: Record<string, string>): CliRun {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "src/cli/main.ts"), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "", stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

/** Runs `straggler <args>` to the end; throws with its output when it exits non-zero. */
export async function runCli(args: string[], env: Record<string, string>): Promise<string> {
  const r = await startCli(args, env).done;
  if (r.code !== 0) throw new Error(`straggler ${args.join(" ")} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}
