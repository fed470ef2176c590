/**
 * The real service (`straggler serve`) as a child process, for crash and
 * outage tests: start it on a port of our choosing, wait for `/health`, talk
 * to it over plain HTTP (a fresh connection per request: no keep-alive socket
 * survives a killed server), kill it, and list its descendant processes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { REPO_ROOT } from "./fixtures.js";

export { prng } from "./prng.js";

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` every `everyMs` until it returns something other than undefined; after `timeoutMs` (generous: machines running tests are busy) it throws naming `what`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 120_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A TCP port free on 127.0.0.1 right now (the kernel picks it; we release it at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Pids of every live descendant of `pid` (from /proc). */
export function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(path.join("/proc", name, "stat"), "utf8");
      // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parentOf.set(Number(name), ppid);
    } catch {
      // the process ended while we looked
    }
  }
  const out: number[] = [];
  const frontier = [pid];
  while (frontier.length > 0) {
    const p = frontier.pop()!;
    for (const [child, parent] of parentOf) {
      if (parent === p) {
        out.push(child);
        frontier.push(child);
      }
    }
  }
  return out;
}

/** True while `pid` is a live (not zombie) process. */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(path.join("/proc", String(pid), "stat"), "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The command line of `pid`, or "" when it is gone. */
export function commandOf(pid: number): string {
  try {
    return readFileSync(path.join("/proc", String(pid), "cmdline"), "utf8")
      .split("\0")
      .join(" ")
      .trim();
  } catch {
    return "";
  }
}

/**
 * Kills `proc` with `signal` and waits for its exit; then checks that every
 * process it had started is gone too (within `graceMs`).
 * @returns the exit, and the command lines of the descendants it had (all gone)
 * @throws when a descendant outlives it
 */
export async function killAndReap(proc: ServeProcess, signal: NodeJS.Signals, timeoutMs = 30_000, graceMs = 5_000) {
  const before = descendants(proc.pid).map((pid) => ({ pid, command: commandOf(pid) }));
  proc.child.kill(signal);
  const exit = await Promise.race([proc.exited, sleep(timeoutMs).then(() => undefined)]);
  if (exit === undefined)
    throw new Error(`${signal} did not end the service within ${timeoutMs} ms:\n${proc.output()}`);
  const deadline = Date.now() + graceMs;
  while (before.some((d) => alive(d.pid))) {
    if (Date.now() > deadline) {
      const left = before.filter((d) => alive(d.pid));
      throw new Error(
        `processes started by the service outlived it: ${left.map((d) => `${d.pid} ${d.command}`).join("; ")}`,
      );
    }
    await sleep(20);
  }
  return { exit, descendants: before.map((d) => d.command) };
}

export interface HttpResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: unknown;
}

/** One HTTP request on a fresh connection; rejects on connection-level failures (refused, reset, timeout). */
export function request(
  baseUrl: string,
  method: string,
  urlPath: string,
  opts: { headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const u = new URL(urlPath, baseUrl);
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method,
        agent: false,
        headers: {
          ...(opts.body !== undefined ? { "content-length": String(Buffer.byteLength(opts.body)) } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("error", reject);
        res.on("end", () => {
          let json: unknown;
          try {
            json = text === "" ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.setTimeout(opts.timeoutMs ?? 30_000, () =>
      req.destroy(new Error(`${method} ${urlPath}: no answer within ${opts.timeoutMs ?? 30_000} ms`)),
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

export interface ServeProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  baseUrl: string;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last lines of its stderr (pino JSON logs) and stdout. */
  output(): string;
  /** Lines of its log at level error (50) or fatal (60). */
  errorLines(): string[];
  /** Polls GET /health until 200; throws with the service's output when it exits or times out. */
  waitHealthy(timeoutMs?: number): Promise<number>;
  request(method: string, urlPath: string, opts?: Parameters<typeof request>[3]): Promise<HttpResult>;
}

const KEEP_LINES = 400;

/** Starts `straggler serve` on `port` with `env` added to the environment. */
export function startServe(port: number, env: Record<string, string>): ServeProcess {
  // bin/straggler.mjs, as users run it: the compiled dist/ (globalSetup builds it when stale).
  const child = spawn(process.execPath, [path.join(REPO_ROOT, "bin/straggler.mjs"), "serve"], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: "warn", ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const errors: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of String(chunk).split("\n")) {
      if (line.trim() === "") continue;
      lines.push(line);
      if (lines.length > KEEP_LINES) lines.shift();
      if (/"level":(50|60)/.test(line)) errors.push(line);
    }
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
    }),
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const self: ServeProcess = {
    child,
    pid: child.pid!,
    port,
    baseUrl,
    exited,
    output: () => lines.join("\n"),
    errorLines: () => [...errors],
    request: (method, urlPath, opts) => request(baseUrl, method, urlPath, opts),
    async waitHealthy(timeoutMs = 180_000) {
      const started = Date.now();
      for (;;) {
        if (exitInfo)
          throw new Error(
            `the service exited (${JSON.stringify(exitInfo)}) before /health answered 200:\n${self.output()}`,
          );
        try {
          const r = await request(baseUrl, "GET", "/health", { timeoutMs: 5_000 });
          if (r.status === 200) return Date.now() - started;
        } catch {
          // not listening yet
        }
        if (Date.now() - started > timeoutMs)
          throw new Error(`/health did not answer 200 within ${timeoutMs} ms:\n${self.output()}`);
        await sleep(50);
      }
    },
  };
  return self;
}
