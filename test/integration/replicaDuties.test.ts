/**
 * Duties of the owner alone, with real `straggler serve` processes on one database:
 *
 * - a replica paused past its lease (SIGSTOP, as a long GC pause would) while
 *   its micro-batch is in flight: the server ends its silent lease session,
 *   the other replica takes the pipeline (a new epoch); resumed (SIGCONT), the
 *   paused replica's batch reaches its fence and rolls back with a log line,
 *   and the new owner's batch commits the rows once: one batch, the
 *   checkpoint moved once, every event counted once;
 * - alerts are judged only by each pipeline's owner: two replicas, two
 *   pipelines, each judged by one replica (its `alerts judged` debug lines).
 */
import { mkdtempSync, renameSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LockNamespace, XACT_LOCK_SQL } from "../../src/db/locks.js";
import { useTestDatabase } from "../helpers/db.js";
import { servicePipelineYaml } from "../helpers/fixtures.js";
import { blockedOn, holdLock } from "../helpers/locks.js";
import { freePort, killAndReap, startServe, waitFor, type ServeProcess } from "../helpers/service.js";

const getDb = useTestDatabase();
const TOKEN = "duties-token-0123456789abcdef";
const T0 = Date.parse("2026-11-30T10:00:00Z");
const N = 100;

const started: ServeProcess[] = [];
afterAll(async () => {
  for (const p of started) {
    if (p.child.exitCode !== null || p.child.signalCode !== null) continue;
    p.child.kill("SIGCONT");
    p.child.kill("SIGKILL");
  }
});

/** `pipeline → owner` as `replica`'s `GET /pipelines` reports it. */
async function ownersSeenBy(replica: ServeProcess): Promise<Record<string, string | null>> {
  const r = await replica.request("GET", "/pipelines", { timeoutMs: 10_000 });
  return Object.fromEntries((r.json as { pipeline: string; owner: string | null }[]).map((p) => [p.pipeline, p.owner]));
}

/** The JSON log lines of `replica` whose message is `msg`. */
const logLines = (replica: ServeProcess, msg: string) =>
  replica
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { msg: string; pipeline?: string; time: number })
    .filter((l) => l.msg === msg);

describe("duties of a pipeline's owner alone", () => {
  it(
    "a replica paused past its lease with a batch in flight: its batch rolls back at the fence, the new owner's commits the rows once",
    { timeout: 300_000 },
    async () => {
      const { pool, url } = await getDb();
      const dir = mkdtempSync(path.join(tmpdir(), "straggler-duties-"));
      const landingDir = mkdtempSync(path.join(dir, "in-"));
      const config = path.join(dir, "pipelines.yaml");
      writeFileSync(config, `pipelines:${servicePipelineYaml("gamma", landingDir)}`);
      const env = (id: string) => ({
        DATABASE_URL: url,
        STRAGGLER_PIPELINES: config,
        STRAGGLER_API_TOKEN: TOKEN,
        STRAGGLER_REPLICA_ID: id,
        STRAGGLER_LEASE_HEARTBEAT: "200 milliseconds",
        LOG_LEVEL: "info",
      });
      // r1 first, so it owns gamma; then r2, which waits.
      const r1 = startServe(await freePort(), env("r1"));
      started.push(r1);
      await r1.waitHealthy();
      expect(await ownersSeenBy(r1)).toEqual({ gamma: "r1" });
      const epochOf = async () =>
        (await pool.query("SELECT epoch::text, owner FROM straggler.pipeline_leases WHERE pipeline = 'gamma'"))
          .rows[0] as { epoch: string; owner: string };
      const first = await epochOf();
      expect(first.owner).toBe("r1");
      const r2 = startServe(await freePort(), env("r2"));
      started.push(r2);
      await r2.waitHealthy();

      // r1 lands a file, and its batch waits inside its transaction for the results lock the test holds.
      const results = await holdLock(pool, XACT_LOCK_SQL, [LockNamespace.results, "gamma"]);
      const lines = Array.from({ length: N }, (_, i) =>
        JSON.stringify({ id: `e${i}`, t: new Date(T0 + i * 1000).toISOString(), k: `k${i % 4}`, v: i }),
      );
      writeFileSync(path.join(landingDir, "_events.jsonl"), lines.join("\n") + "\n");
      utimesSync(path.join(landingDir, "_events.jsonl"), new Date(T0), new Date(T0));
      renameSync(path.join(landingDir, "_events.jsonl"), path.join(landingDir, "events.jsonl"));
      await blockedOn(pool, "%pg_advisory_xact_lock%");
      expect(await ownersSeenBy(r2)).toEqual({ gamma: "r1" });

      // r1 pauses: its lease session goes silent, the server ends it after 5 heartbeats, r2 takes gamma.
      // The taking is done when r2 has raised the fencing token: r2 holds the lease's lock (what GET /pipelines
      // reports) a moment before that row commits, a moment a loaded machine stretches.
      r1.child.kill("SIGSTOP");
      const taken = await waitFor(
        "r2 to take gamma (its epoch raised)",
        async () => {
          const now = await epochOf();
          return now.owner === "r2" ? now : undefined;
        },
        120_000,
        50,
      );
      expect([BigInt(taken.epoch) > BigInt(first.epoch), (await ownersSeenBy(r2)).gamma]).toEqual([true, "r2"]);
      // r1's batch gets the results lock first (r1 still paused: its transaction stays open); r2's waits behind it.
      await results.release();
      r1.child.kill("SIGCONT");

      // r1 learns it lost gamma at its batch's fence (the commit rolls back), or, on a loaded machine, from its
      // heartbeat first (its work stops and the batch in flight then meets the fence or is abandoned): either
      // way nothing of r1's batch commits, which the counts below check.
      const fenced = `lease lost: pipeline gamma: the lease of epoch ${first.epoch} is no longer held (epoch ${taken.epoch}, taken by r2); the transaction rolled back and nothing of it was committed`;
      await waitFor(
        "r1 to log its batch rolled back at the fence, or its leases given up",
        async () =>
          r1.output().includes(fenced) ||
          /leases given up: (the heartbeat failed|the lease connection)/.test(r1.output())
            ? true
            : undefined,
        120_000,
      );
      const said = r1
        .output()
        .split("\n")
        .filter((l) => /"msg":"(lease lost|leases given up)/.test(l))
        .map((l) => (JSON.parse(l) as { msg: string }).msg);
      console.log(`[duties] r1 after SIGCONT: ${said.join(" | ")}`);
      await waitFor(
        "r2 to stream the rows",
        async () => {
          const { rows } = await pool.query(
            "SELECT count(*)::int AS n FROM straggler.batch_progress WHERE pipeline = 'gamma'",
          );
          return rows[0].n > 0 ? true : undefined;
        },
        120_000,
      );
      const { rows: progress } = await pool.query(
        "SELECT batch_id, num_input_rows FROM straggler.batch_progress WHERE pipeline = 'gamma'",
      );
      expect(progress).toEqual([{ batch_id: 0, num_input_rows: N }]);
      const { rows: cp } = await pool.query(
        "SELECT batch_id, last_offset::int = (SELECT max(seq) FROM straggler.bronze WHERE pipeline = 'gamma') AS at_end FROM straggler.checkpoints WHERE pipeline = 'gamma'",
      );
      expect(cp).toEqual([{ batch_id: 0, at_end: true }]);
      const { rows: totals } = await pool.query(
        "SELECT (SELECT count(*)::int FROM straggler.bronze WHERE pipeline = 'gamma') AS rows, sum(event_count)::int AS events, sum(value_sum)::int AS sum FROM straggler.window_results WHERE pipeline = 'gamma'",
      );
      expect(totals).toEqual([{ rows: N, events: N, sum: 4950 }]);
      // The batch was r2's: r1 committed none.
      expect([logLines(r1, "batch committed").length, logLines(r2, "batch committed").length]).toEqual([0, 1]);
      expect(r1.child.exitCode).toBeNull(); // r1 lives on as a replica without the pipeline
      expect(await ownersSeenBy(r1)).toEqual({ gamma: "r2" });
      for (const p of [r1, r2]) expect((await killAndReap(p, "SIGTERM")).exit).toEqual({ code: 0, signal: null });
    },
  );

  it("alerts are judged by each pipeline's owner only", { timeout: 300_000 }, async () => {
    const { url } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-duties-"));
    const config = path.join(dir, "pipelines.yaml");
    const one = (name: string) => `
  - name: ${name}
    source: { format: jsonl }
    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }
    window: { type: tumbling, size: 1 minute }
    watermark: { delay: 30 seconds }
    alerts: { backlog: { above: 1000 } }`;
    writeFileSync(config, `pipelines:${one("alpha")}${one("beta")}\n`);
    const replicas = await Promise.all(
      ["r1", "r2"].map(async (id) => {
        const p = startServe(await freePort(), {
          DATABASE_URL: url,
          STRAGGLER_PIPELINES: config,
          STRAGGLER_API_TOKEN: TOKEN,
          STRAGGLER_REPLICA_ID: id,
          LOG_LEVEL: "debug",
        });
        started.push(p);
        return { id, p };
      }),
    );
    await Promise.all(replicas.map((r) => r.p.waitHealthy()));
    const owners = await waitFor(
      "alpha and beta owned by different replicas",
      async () => {
        const seen = await ownersSeenBy(replicas[0]!.p);
        return seen.alpha && seen.beta && seen.alpha !== seen.beta ? seen : undefined;
      },
      120_000,
    );
    // Judgements from half a second after the split was seen (a round judging a pipeline just given up has ended by then) (a round every 5 s): at least two per pipeline, each by its owner.
    const splitAt = Date.now() + 500;
    const judged = () =>
      replicas.map((r) => ({
        id: r.id,
        pipelines: logLines(r.p, "alerts judged")
          .filter((l) => l.time > splitAt)
          .map((l) => l.pipeline),
      }));
    const seen = await waitFor(
      "two rounds of alerts on each replica",
      async () => {
        const j = judged();
        return j.every((r) => r.pipelines.length >= 2) ? j : undefined;
      },
      60_000,
      200,
    );
    for (const r of seen)
      expect([r.id, [...new Set(r.pipelines)]]).toEqual([r.id, [owners.alpha === r.id ? "alpha" : "beta"]]);
    for (const r of replicas) expect((await killAndReap(r.p, "SIGTERM")).exit).toEqual({ code: 0, signal: null });
  });
});
