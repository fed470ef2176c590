/**
 * The NATS JetStream source in the real service (`straggler serve`, a child
 * process) against a real nats-server started by the test: killed with
 * SIGKILL in the middle of a batch (held at its offset write, its rows COPYed
 * but not committed), killed again at a moment of its choosing, restarted:
 * every message is in bronze once, and the windows are those of the same
 * messages landed from a file in one go (and of a plain aggregation of them).
 * Then the server itself is stopped and started again while messages are
 * published: nothing lost, nothing doubled.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { runCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { backendGone, blockedOn, holdLock } from "../helpers/locks.js";
import { addStream, natsClient, publishUntilStored, startNatsServer, type NatsServer } from "../helpers/natsServer.js";
import { freePort, killAndReap, sleep, startServe, waitFor } from "../helpers/service.js";

const getDb = useTestDatabase();
let server: NatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await natsClient(server.url);
});
afterAll(async () => {
  await nc?.close();
  await server?.dispose();
});

const T0 = Date.parse("2026-11-30T10:00:00Z");
const PARTS = ["a", "b", "c"];
/** Message i of a run: partition a/b/c in turn, key k0-k3, one second apart in event time. */
const payload = (i: number) => ({ t: new Date(T0 + i * 1000).toISOString(), k: `k${i % 4}`, v: i % 7 });

/** The windows a plain aggregation of messages 0..n-1 gives: 1-minute windows, count and sum per key. */
function expectedWindows(n: number) {
  const m = new Map<string, { group_key: string; window_start: string; event_count: number; value_sum: number }>();
  for (let i = 0; i < n; i++) {
    const p = payload(i);
    const start = new Date(Math.floor(Date.parse(p.t) / 60_000) * 60_000).toISOString();
    const w = m.get(`${p.k} ${start}`) ?? { group_key: p.k, window_start: start, event_count: 0, value_sum: 0 };
    w.event_count++;
    w.value_sum += p.v;
    m.set(`${p.k} ${start}`, w);
  }
  return [...m.values()].sort(
    (a, b) => a.group_key.localeCompare(b.group_key) || a.window_start.localeCompare(b.window_start),
  );
}

async function windows(pool: Pool, pipeline: string) {
  const { rows } = await pool.query(
    `SELECT group_key, to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.000"Z"') AS window_start, event_count::int, value_sum::int
       FROM straggler.window_results WHERE pipeline = $1 ORDER BY group_key, window_start`,
    [pipeline],
  );
  return rows;
}

async function bronzeCounts(pool: Pool, pipeline: string) {
  const { rows } = await pool.query(
    `SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS ids, count(*) FILTER (WHERE status = 'quarantined')::int AS quarantined
       FROM straggler.bronze_events WHERE pipeline = $1`,
    [pipeline],
  );
  return rows[0] as { rows: number; ids: number; quarantined: number };
}

function pipelineYaml(name: string, nats: string | undefined): string {
  return `
  - name: ${name}
    source: { format: jsonl${nats === undefined ? "" : `, nats: ${nats}`} }
    fields: { eventTime: t, groupKey: [k], value: v }
    window: { type: tumbling, size: 1 minute }
    watermark: { delay: 1 hour }
    trigger: { interval: 200 milliseconds, maxRowsPerBatch: 100 }`;
}

describe("NATS source in the service", () => {
  it("SIGKILL mid-batch and at a moment of its own, restarted: every message once, the windows of an uninterrupted landing", async () => {
    const { pool, url } = await getDb();
    const N = 1200;
    await addStream(nc, "ORD", ["ord.>"]);
    for (let i = 0; i < N; i++) await publishUntilStored(nc, `ord.${PARTS[i % 3]}.new`, payload(i), `o-${i}`);
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-nats-svc-"));
    const file = path.join(dir, "pipelines.yaml");
    const nats = `{ servers: "${server.url}", stream: ORD, subject: "ord.*.>", partitionToken: 2, ackWait: 2 seconds }`;
    writeFileSync(file, `pipelines:${pipelineYaml("orders", nats)}${pipelineYaml("reference", undefined)}\n`);
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: file };
    const port = await freePort();

    // 1. Held at its first offset write (rows COPYed, not committed) and killed there.
    const held = await holdLock(pool, "LOCK TABLE straggler.log_offsets IN EXCLUSIVE MODE");
    let svc = startServe(port, env);
    await svc.waitHealthy();
    const victim = await blockedOn(pool, "%straggler.log_offsets%");
    await killAndReap(svc, "SIGKILL");
    await held.release();
    await backendGone(pool, victim);
    expect(await bronzeCounts(pool, "orders")).toEqual({ rows: 0, ids: 0, quarantined: 0 });

    // 2. Restarted, and killed again once a third has landed (between batches, mid-landing or before an acknowledgement).
    svc = startServe(port, env);
    await svc.waitHealthy();
    await waitFor(
      "a third of the messages landed",
      async () => ((await bronzeCounts(pool, "orders")).rows >= N / 3 ? true : undefined),
      60_000,
    );
    await killAndReap(svc, "SIGKILL");

    // 3. Restarted: the rest lands, once.
    svc = startServe(port, env);
    await svc.waitHealthy();
    await waitFor(
      "every message landed",
      async () => ((await bronzeCounts(pool, "orders")).rows >= N ? true : undefined),
      120_000,
    );
    await runCli(["ingest", "-p", "reference", writeJsonl(dir, N)], env);
    const expected = expectedWindows(N);
    await waitFor(
      "both pipelines streamed",
      async () => {
        const [a, b] = [await windows(pool, "orders"), await windows(pool, "reference")];
        return JSON.stringify(a) === JSON.stringify(expected) && JSON.stringify(b) === JSON.stringify(expected)
          ? true
          : undefined;
      },
      60_000,
      200,
    );
    expect(await windows(pool, "orders")).toEqual(expected);
    expect(expected).toHaveLength(80);
    expect(await bronzeCounts(pool, "orders")).toEqual({ rows: N, ids: N, quarantined: 0 });
    const offsets = (
      await pool.query(
        `SELECT partition, last_offset::int AS last FROM straggler.log_offsets WHERE pipeline = 'orders' ORDER BY 1`,
      )
    ).rows;
    expect(offsets).toEqual([
      { partition: "*", last: 1200 },
      { partition: "a", last: 1198 },
      { partition: "b", last: 1199 },
      { partition: "c", last: 1200 },
    ]);
    const metrics = (await svc.request("GET", "/metrics")).text;
    const offsetMetric = (partition: string) =>
      new RegExp(
        `^straggler_log_offset\\{pipeline="orders",log="nats:ORD",partition="${partition.replace("*", "\\*")}"\\} (\\d+)$`,
        "m",
      ).exec(metrics)?.[1];
    expect(["*", "a", "b", "c"].map(offsetMetric)).toEqual(["1200", "1198", "1199", "1200"]);
    const jsm = await nc.jetstreamManager();
    await waitFor(
      "the last batch acknowledged",
      async () => ((await jsm.consumers.info("ORD", "straggler-orders")).num_ack_pending === 0 ? true : undefined),
      120_000,
    );

    // 4. A graceful stop ends the consumer's pull and the process.
    const stopped = await killAndReap(svc, "SIGTERM");
    expect(stopped.exit).toEqual({ code: 0, signal: null });
    expect(svc.errorLines()).toEqual([]);
  }, 420_000);
});

function writeJsonl(dir: string, n: number): string {
  const f = path.join(dir, "reference.jsonl");
  writeFileSync(f, Array.from({ length: n }, (_, i) => JSON.stringify(payload(i))).join("\n") + "\n");
  return f;
}
