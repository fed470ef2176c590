/**
 * scripts/nats-publish.mjs (the docs' way to publish to JetStream): JSON lines from a file or stdin,
 * one acknowledged message each; --stream creates the stream; --msg-id-field sets Nats-Msg-Id; bad
 * lines and an unreachable server are clear errors that publish nothing.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/fixtures.js";
import { natsClient, startNatsServer, type NatsServer } from "../helpers/natsServer.js";
import { freePort } from "../helpers/service.js";

let server: NatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await natsClient(server.url);
}, 120_000);

afterAll(async () => {
  await nc?.close();
  await server?.dispose();
});

function publish(args: string[], input?: string) {
  const r = spawnSync("node", [path.join(REPO_ROOT, "scripts/nats-publish.mjs"), "--server", server.url, ...args], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    input,
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("scripts/nats-publish.mjs", () => {
  it("creates the stream, publishes a file's lines and stdin's, and the server drops a repeated Nats-Msg-Id", async () => {
    expect(
      publish([
        "--stream",
        "EVENTS",
        "--subjects",
        "events.>",
        "--msg-id-field",
        "id",
        "events.eu.orders",
        "examples/nats/eu.jsonl",
      ]),
    ).toEqual({
      status: 0,
      stdout: "published 3 messages to events.eu.orders (stream EVENTS, last sequence 3)\n",
      stderr: "nats-publish: created stream EVENTS (subjects events.>)\n",
    });
    expect(
      publish(
        ["--msg-id-field", "id", "events.us.orders", "-"],
        '{"id": "us-1", "t": "2026-10-01T12:00:30Z"}\n\n{"id": "eu-1", "t": "x"}\n',
      ),
    ).toEqual({
      status: 0,
      stdout:
        "published 2 messages to events.us.orders (stream EVENTS, last sequence 4, 1 of them duplicates the stream already held (same Nats-Msg-Id))\n",
      stderr: "",
    });
    const jsm = await nc.jetstreamManager();
    const m = await jsm.streams.getMessage("EVENTS", { seq: 4 });
    expect({ subject: m.subject, data: m.string(), id: m.header.get("Nats-Msg-Id") }).toEqual({
      subject: "events.us.orders",
      data: '{"id": "us-1", "t": "2026-10-01T12:00:30Z"}',
      id: "us-1",
    });
    expect((await jsm.streams.info("EVENTS")).state.messages).toBe(4);
  });

  it("refuses a line that is not a JSON object, and a subject no stream takes, naming them", async () => {
    expect(publish(["events.eu.orders", "-"], '{"a": 1}\n[1]\n')).toEqual({
      status: 1,
      stdout: "",
      stderr: "nats-publish: stdin:2: not a JSON object: nothing was published\n",
    });
    expect(publish(["nowhere.x", "-"], '{"a": 1}\n')).toEqual({
      status: 1,
      stdout: "",
      stderr:
        "nats-publish: message 1 to nowhere.x not acknowledged: no stream takes this subject (create one with --stream NAME); 0 of 1 published\n",
    });
    expect((await (await nc.jetstreamManager()).streams.info("EVENTS")).state.messages).toBe(4);
  });

  it("says which server it cannot reach and what to check", async () => {
    const port = await freePort();
    const r = spawnSync(
      "node",
      [
        "scripts/nats-publish.mjs",
        "--server",
        `nats://127.0.0.1:${port}`,
        "events.eu.orders",
        "examples/nats/eu.jsonl",
      ],
      { cwd: REPO_ROOT, encoding: "utf8" },
    );
    expect({ status: r.status, stdout: r.stdout, stderr: r.stderr }).toEqual({
      status: 1,
      stdout: "",
      stderr: `nats-publish: cannot reach the NATS server at nats://127.0.0.1:${port} (CONNECTION_REFUSED): is nats-server running there, with JetStream (nats-server -js)? Give another with --server or NATS_URL. Nothing was published\n`,
    });
  });
});
