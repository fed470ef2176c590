/**
 * Several replicas, one owner per pipeline (README "Replicas"): three real
 * `straggler serve` processes on one database, two pipelines fed over HTTP
 * through every replica.
 *
 * - each pipeline is owned by one replica, two different ones (share
 *   ceil(2 / 3) = 1), and every replica, `/metrics` and `straggler status` say which;
 * - the owner of `alpha` is killed with SIGKILL while requests are landing
 *   and its stream has a backlog: another replica takes `alpha` over
 *   (takeover time printed; asserted only against a generous bound);
 * - the lease connection of `beta`'s owner is ended by the server while its
 *   process lives: that replica gives up its lease (fencing) and `beta` is
 *   owned again;
 * - a request cut by the kill is retried on a survivor with its
 *   Idempotency-Key: every event lands once (4000 per pipeline), and the window
 *   results equal a single-process run of the same requests and those of an
 *   in-memory count of the dataset.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { runCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { freePort, killAndReap, prng, sleep, startServe, waitFor, type ServeProcess } from "../helpers/service.js";

const getDb = useTestDatabase();
const TOKEN = "replicas-token-0123456789abcdef";
const EVENTS = 4000;
const PER_REQUEST = 50;
const REQUESTS = EVENTS / PER_REQUEST;
const BASE_MS = Date.parse("2026-10-01T12:00:00Z");

/** HTTP-fed pipelines: 1-minute tumbling windows, 10-minute delay (requests land out of order by far less), small batches so a backlog builds. */
function writeConfig(dir: string, names: string[]): string {
  const file = path.join(dir, `pipelines-${names.join("-")}.yaml`);
  const one = (name: string) => `
  - name: ${name}
    source: { format: jsonl }
    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }
    window: { type: tumbling, size: 1 minute }
    watermark: { delay: 10 minutes }
    trigger: { interval: 200 milliseconds, maxRowsPerBatch: 100 }`;
  writeFileSync(file, `pipelines:${names.map(one).join("")}\n`);
  return file;
}

interface Event {
  id: string;
  t: string;
  k: string;
  v: string;
}

/** 4000 events 250 ms apart, each up to 20 s early or late, 5 keys, integer values. */
function dataset(seed: number): Event[] {
  const rand = prng(seed);
  return Array.from({ length: EVENTS }, (_, i) => ({
    id: `e${i}`,
    t: new Date(BASE_MS + i * 250 + Math.round((rand() - 0.5) * 40_000)).toISOString(),
    k: `k${Math.floor(rand() * 5)}`,
    v: String(Math.floor(rand() * 1000)),
  }));
}

/** `key [start)=count sum status` per window of a count over `events`, with the watermark the stream reaches (max event time - 10 min). */
function expectedWindows(events: Event[]): string[] {
  const windows = new Map<string, { count: number; sum: number }>();
  let max = 0;
  for (const e of events) {
    const t = Date.parse(e.t);
    max = Math.max(max, t);
    const key = `${e.k} ${new Date(t - (t % 60_000)).toISOString()}`;
    const w = windows.get(key) ?? { count: 0, sum: 0 };
    w.count++;
    w.sum += Number(e.v);
    windows.set(key, w);
  }
  const watermark = max - 600_000;
  return [...windows.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, w]) => {
      const end = Date.parse(key.split(" ")[1]!) + 60_000;
      return `${key}=${w.count} ${w.sum} ${end <= watermark ? "final" : "open"}`;
    });
}

async function windowsOf(pool: Pool, pipeline: string): Promise<string[]> {
  const { rows } = await pool.query(
    `SELECT group_key, window_start, event_count, value_sum, status FROM straggler.window_results WHERE pipeline = $1 ORDER BY group_key, window_start`,
    [pipeline],
  );
  return rows.map((r) => `${r.group_key} ${r.window_start}=${r.event_count} ${r.value_sum} ${r.status}`);
}

async function bronzeCounts(pool: Pool, pipeline: string): Promise<{ rows: number; ids: number }> {
  const { rows } = await pool.query(
    "SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS ids FROM straggler.bronze WHERE pipeline = $1",
    [pipeline],
  );
  return rows[0];
}

/** `pipeline → owner` as one replica's `GET /pipelines` reports it. */
async function ownersSeenBy(replica: ServeProcess): Promise<Record<string, string | null>> {
  const r = await replica.request("GET", "/pipelines", { timeoutMs: 10_000 });
  return Object.fromEntries((r.json as { pipeline: string; owner: string | null }[]).map((p) => [p.pipeline, p.owner]));
}

/** Waits until `pipelines` have caught up: every landed row streamed. */
async function caughtUp(replica: ServeProcess, pipelines: string[], timeoutMs = 120_000): Promise<void> {
  await waitFor(
    `${pipelines.join(", ")} to catch up`,
    async () => {
      const r = await replica.request("GET", "/pipelines", { timeoutMs: 10_000 });
      const rows = (r.json as { pipeline: string; backlogRows: number; ledger: { landed: number } }[]).filter((p) =>
        pipelines.includes(p.pipeline),
      );
      return rows.length === pipelines.length && rows.every((p) => p.backlogRows === 0 && p.ledger.landed === EVENTS)
        ? true
        : undefined;
    },
    timeoutMs,
    100,
  );
}

/**
 * Sends every request of `plan` (pipeline, index) with 4 workers, round-robin over the replicas
 * `targets()` returns at the time; a request whose replica fails (killed) is sent to the next with its key.
 */
async function sendAll(
  plan: [string, number][],
  data: Event[],
  targets: () => ServeProcess[],
): Promise<{ retried: number }> {
  let next = 0,
    retried = 0;
  const worker = async (w: number) => {
    for (;;) {
      const i = next++;
      if (i >= plan.length) return;
      const [pipeline, r] = plan[i]!;
      const body = data
        .slice(r * PER_REQUEST, (r + 1) * PER_REQUEST)
        .map((e) => JSON.stringify(e))
        .join("\n");
      for (let attempt = 0; ; attempt++) {
        const live = targets();
        const to = live[(i + w + attempt) % live.length]!;
        try {
          const res = await to.request("POST", `/pipelines/${pipeline}/events`, {
            headers: {
              authorization: `Bearer ${TOKEN}`,
              "content-type": "application/x-ndjson",
              "idempotency-key": `${pipeline}-${r}`,
            },
            body,
            timeoutMs: 30_000,
          });
          if (res.status !== 201 && res.status !== 200)
            throw new Error(`POST ${pipeline} request ${r}: ${res.status} ${res.text}`);
          break;
        } catch (e) {
          if (attempt >= 5 || !/ECONNREFUSED|ECONNRESET|socket hang up|EPIPE/.test((e as Error).message)) throw e;
          retried++;
          await sleep(50);
        }
      }
    }
  };
  await Promise.all([0, 1, 2, 3].map(worker));
  return { retried };
}

const plan = (from: number, to: number): [string, number][] => {
  const out: [string, number][] = [];
  for (let r = from; r < to; r++) out.push(["alpha", r], ["beta", r]);
  return out;
};

const started: ServeProcess[] = [];
afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
});

describe("replicas: one owner per pipeline", () => {
  it(
    "three replicas: the owner killed with SIGKILL is taken over, a fenced lease is given up, nothing lost or doubled, results equal a single-process run",
    { timeout: 300_000 },
    async () => {
      const { pool, url } = await getDb();
      const dir = mkdtempSync(path.join(tmpdir(), "straggler-replicas-"));
      const config = writeConfig(dir, ["alpha", "beta"]);
      const data = dataset(16);
      const env = (id: string) => ({
        DATABASE_URL: url,
        STRAGGLER_PIPELINES: config,
        STRAGGLER_API_TOKEN: TOKEN,
        STRAGGLER_REPLICA_ID: id,
      });
      const replicas = await Promise.all(
        ["r1", "r2", "r3"].map(async (id) => {
          const p = startServe(await freePort(), env(id));
          started.push(p);
          return { id, p };
        }),
      );
      await Promise.all(replicas.map((r) => r.p.waitHealthy()));

      // One owner each, two different replicas, the same answer from every replica.
      const owners = await waitFor("both pipelines owned by different replicas", async () => {
        const seen = await ownersSeenBy(replicas[0]!.p);
        return seen.alpha && seen.beta && seen.alpha !== seen.beta ? seen : undefined;
      });
      for (const r of replicas) expect(await ownersSeenBy(r.p)).toEqual(owners);
      const idle = replicas.find((r) => r.id !== owners.alpha && r.id !== owners.beta)!.id;
      const metrics = (await replicas[0]!.p.request("GET", "/metrics")).text;
      expect(
        ["r1", "r2", "r3"].map(
          (id) => new RegExp(`^straggler_replica_owned_pipelines\\{replica="${id}"\\} (\\d+)$`, "m").exec(metrics)?.[1],
        ),
      ).toEqual(["r1", "r2", "r3"].map((id) => (id === idle ? "0" : "1")));
      expect(/^straggler_pipeline_owned\{pipeline="alpha"\} (\d)$/m.exec(metrics)?.[1]).toBe("1");
      const status = await runCli(["status", "-p", "alpha"], { DATABASE_URL: url, STRAGGLER_PIPELINES: config });
      expect(status).toContain(`  owner:                 ${owners.alpha}\n`);

      // First half through every replica.
      let live = replicas.map((r) => r.p);
      await sendAll(plan(0, REQUESTS / 2), data, () => live);

      // Second half while alpha's owner is killed (it has a backlog: batches of 100 rows).
      const victim = replicas.find((r) => r.id === owners.alpha)!;
      const sending = sendAll(plan(REQUESTS / 2, REQUESTS), data, () => live);
      await sleep(300);
      const killedAt = Date.now();
      await killAndReap(victim.p, "SIGKILL");
      // Requests sent to the victim until now fail (refused or reset) and are retried on a survivor with their key.
      live = live.filter((p) => p !== victim.p);
      const survivor = live[0]!;
      const {
        rows: [last],
      } = await pool.query("SELECT batch_id FROM straggler.checkpoints WHERE pipeline = 'alpha'");
      const takeover = await waitFor(
        "alpha taken over",
        async () => {
          const o = (await ownersSeenBy(survivor)).alpha;
          return o && o !== victim.id ? { owner: o, ms: Date.now() - killedAt } : undefined;
        },
        30_000,
        20,
      );
      const resumedMs = await waitFor(
        "alpha's stream to commit a batch after the kill",
        async () => {
          const { rows } = await pool.query(
            "SELECT min(timestamp) AS at FROM straggler.batch_progress WHERE pipeline = 'alpha' AND batch_id > $1",
            [last?.batch_id ?? -1],
          );
          return rows[0].at ? Date.parse(rows[0].at) - killedAt : undefined;
        },
        30_000,
        50,
      );
      console.log(
        `[replicas] alpha owned by ${victim.id} killed with SIGKILL: owned by ${takeover.owner} after ${takeover.ms} ms, its first batch committed ${resumedMs} ms after the kill (heartbeat 1 s)`,
      );
      expect(takeover.owner).toBe(idle); // the replica with no pipeline takes it: the other already owns its share
      expect(takeover.ms).toBeLessThan(15_000);

      // The lease session of beta's owner ended by the server while the process lives: it gives the lease up.
      const betaOwner = replicas.find((r) => r.id === owners.beta)!;
      const { rows: ended } = await pool.query(
        "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1",
        [`straggler replica ${betaOwner.id}`],
      );
      expect(ended).toEqual([{ ok: true }]);
      // Which notices first depends on the machine's load: the lease connection's own error or end, or the next heartbeat's query.
      await waitFor(
        "beta's owner to log that it gave its lease up",
        async () =>
          /leases given up: (the lease connection|the heartbeat failed)/.test(betaOwner.p.output()) ? true : undefined,
        120_000,
      );
      await waitFor("beta owned again", async () => ((await ownersSeenBy(survivor)).beta ? true : undefined), 120_000);

      const { retried } = await sending;
      console.log(`[replicas] ${retried} requests retried on another replica after the kill`);
      await caughtUp(survivor, ["alpha", "beta"]);

      for (const pipeline of ["alpha", "beta"]) {
        expect([pipeline, await bronzeCounts(pool, pipeline)]).toEqual([pipeline, { rows: EVENTS, ids: EVENTS }]);
        const { rows: ledger } = await pool.query(
          "SELECT landed, accepted, quarantined FROM straggler.ledger WHERE pipeline = $1",
          [pipeline],
        );
        expect(ledger).toEqual([{ landed: EVENTS, accepted: EVENTS, quarantined: 0 }]);
      }
      const expected = expectedWindows(data);
      expect(expected.length).toBe(90); // 5 keys x 18 one-minute windows (11:59 to 12:16)
      expect(await windowsOf(pool, "alpha")).toEqual(expected);
      expect(await windowsOf(pool, "beta")).toEqual(expected);

      // Survivors stop on SIGTERM (exit 0) and leave no owner behind.
      for (const p of live) expect((await killAndReap(p, "SIGTERM")).exit).toEqual({ code: 0, signal: null });
      expect(await runCli(["status", "-p", "beta"], { DATABASE_URL: url, STRAGGLER_PIPELINES: config })).toContain(
        "  owner:                 none (no service runs this pipeline)\n",
      );

      // The same requests through one process into a pipeline of its own.
      const single = startServe(await freePort(), {
        ...env("single"),
        STRAGGLER_PIPELINES: writeConfig(dir, ["single"]),
      });
      started.push(single);
      await single.waitHealthy();
      await sendAll(
        plan(0, REQUESTS)
          .filter(([p]) => p === "alpha")
          .map(([, r]) => ["single", r]),
        data,
        () => [single],
      );
      await caughtUp(single, ["single"]);
      expect(await windowsOf(pool, "alpha")).toEqual(await windowsOf(pool, "single"));
      await killAndReap(single, "SIGTERM");
    },
  );
});
