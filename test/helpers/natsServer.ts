/**
 * A NATS server with JetStream for one test file: Debian's `nats-server` on a
 * free port of 127.0.0.1 with its store in a temporary folder, so the test can
 * stop it and start it again on the same port and store (a server restart).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { connect, headers, type NatsConnection, type PubAck } from "nats";
import { freePort, sleep, waitFor } from "./service.js";

/** Where the Debian package installs the server; `NATS_SERVER` overrides it. */
export const NATS_SERVER_BIN = process.env.NATS_SERVER ?? "/usr/sbin/nats-server";

export interface NatsServer {
  port: number;
  url: string;
  /** Stops the server (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port and store. */
  start(): Promise<void>;
  /** Stops it and removes its store. */
  dispose(): Promise<void>;
  /** The last lines the server printed (for a failure's message). */
  output(): string;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/** Starts a JetStream server; throws when the binary is missing (install the nats-server package). */
export async function startNatsServer(): Promise<NatsServer> {
  if (!existsSync(NATS_SERVER_BIN))
    throw new Error(`${NATS_SERVER_BIN} is missing: install Debian's nats-server package (scripts/test-here.sh does)`);
  const port = await freePort();
  const store = mkdtempSync(path.join(tmpdir(), "straggler-nats-"));
  let proc: ChildProcess | undefined;
  let exited: Promise<void> | undefined;
  let output = "";
  const start = async () => {
    const p = spawn(NATS_SERVER_BIN, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    output += `--- started (pid ${p.pid})\n`;
    p.once("exit", (code, signal) => (output += `--- exited (${code ?? signal})\n`));
    p.stdout!.on("data", (d) => (output = (output + String(d)).slice(-4000)));
    p.stderr!.on("data", (d) => (output = (output + String(d)).slice(-4000)));
    proc = p;
    exited = new Promise((resolve) => p.once("exit", () => resolve()));
    await waitFor(
      `nats-server on port ${port}\n${output}`,
      async () => ((await portOpen(port)) ? true : undefined),
      60_000,
      50,
    );
  };
  const stop = async () => {
    const p = proc;
    if (p === undefined) return;
    p.kill("SIGTERM");
    const force = setTimeout(() => p.kill("SIGKILL"), 10_000); // only this process: a later start's is another
    await exited;
    clearTimeout(force);
    proc = undefined;
  };
  await start();
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    stop,
    start,
    output: () => output,
    async dispose() {
      await stop();
      rmSync(store, { recursive: true, force: true });
    },
  };
}

/** A client that keeps reconnecting (a publisher that outlives a server restart). */
export function natsClient(url: string): Promise<NatsConnection> {
  return connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
}

/** Creates a file-stored stream `name` over `subjects`. */
export async function addStream(nc: NatsConnection, name: string, subjects: string[]): Promise<void> {
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name, subjects });
}

/**
 * Publishes `data` (JSON) to `subject` with `Nats-Msg-Id: msgId` (when given), trying
 * again until the stream acknowledges it (the server may be restarting); the stream's
 * duplicate window drops a retry of a message it had stored.
 * @returns the stream's acknowledgement (its sequence)
 */
export async function publishUntilStored(
  nc: NatsConnection,
  subject: string,
  data: unknown,
  msgId?: string,
): Promise<PubAck> {
  const js = nc.jetstream();
  const body = new TextEncoder().encode(typeof data === "string" ? data : JSON.stringify(data));
  for (let attempt = 0; ; attempt++) {
    try {
      const h = headers();
      if (msgId !== undefined) h.set("Nats-Msg-Id", msgId);
      return await js.publish(subject, body, { headers: h, timeout: 2_000 });
    } catch (e) {
      if (attempt > 200) throw e;
      await sleep(100);
    }
  }
}
