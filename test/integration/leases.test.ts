/**
 * Pipeline leases in one process (src/cluster/leases.ts), two replicas A and B
 * on one database with a 200 ms heartbeat (1 s for the silent network): shares, hand-over order (the
 * giver's work stops before the taker's starts), fencing when the lease
 * session ends under a living replica, and release on stop. The owners are
 * read back as every process reads them (pg_locks).
 */
import { afterAll, describe, expect, it } from "vitest";
import { PipelineLeases } from "../../src/cluster/leases.js";
import { readPipelineOwners } from "../../src/db/sql/lifecycle/pipelineLeases.js";
import { createLogger } from "../../src/log.js";
import { useTestDatabase } from "../helpers/db.js";
import { waitFor } from "../helpers/service.js";
import { startProxy } from "../helpers/tcpProxy.js";

const getDb = useTestDatabase();
const PIPELINES = ["p1", "p2", "p3"];
const running: PipelineLeases[] = [];
afterAll(() => Promise.all(running.map((l) => l.stop())));

describe("pipeline leases", () => {
  it("share, hand-over, fencing and release between two replicas", { timeout: 240_000 }, async () => {
    const { pool, url } = await getDb();
    /** What happened, in order: `A+p1` acquired, `A-p1` lost (with whether A still owned it then). */
    const events: string[] = [];
    const replica = (id: string) => {
      const leases: PipelineLeases = new PipelineLeases(
        url,
        PIPELINES,
        { replicaId: id, heartbeatMs: 200 },
        {
          acquired: (p) => events.push(`${id}+${p}`),
          lost: async (p) => {
            events.push(`${id}-${p}${leases.owns(p) ? " (still owned)" : ""}`);
          },
        },
        createLogger(process.env.LEASE_LOG ?? "silent"),
      );
      running.push(leases);
      return leases;
    };
    const owners = async () =>
      Object.fromEntries(
        [...(await readPipelineOwners(pool, [...PIPELINES, "unknown"]))].sort(([x], [y]) => (x < y ? -1 : 1)),
      );
    const settled = (want: Record<string, string | null>) =>
      waitFor(
        `owners ${JSON.stringify(want)}`,
        async () => {
          const now = await owners();
          return JSON.stringify(now) === JSON.stringify(want) ? now : undefined;
        },
        60_000,
      );

    // Alone, A owns every pipeline from its first heartbeat.
    const a = replica("A");
    await a.start();
    expect(a.ownedPipelines()).toEqual(PIPELINES);
    expect(await owners()).toEqual({ p1: "A", p2: "A", p3: "A", unknown: null });

    // B joins: the share is ceil(3 / 2) = 2, so A gives up its last pipeline, and B takes it only after A's work stopped.
    const b = replica("B");
    await b.start();
    await settled({ p1: "A", p2: "A", p3: "B", unknown: null });
    // B holds p3's lock before its work starts (it raises the epoch first): wait for the hand-over itself.
    await waitFor("B's work on p3 to start", async () => (events.includes("B+p3") ? true : undefined), 60_000);
    expect(events.slice(0, 3).sort()).toEqual(["A+p1", "A+p2", "A+p3"]);
    expect(events.slice(3)).toEqual(["A-p3", "B+p3"]);

    // A's lease session ended by the server while A lives: A stops its work at once (it no longer owns it when told),
    // reconnects as a replica again, and the three pipelines end up split two and one.
    events.length = 0;
    const { rows } = await pool.query(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'straggler replica A' AND datname = current_database()",
    );
    expect(rows).toEqual([{ ok: true }]);
    // (pg_terminate_backend returns before the session has gone: wait for A to have seen it too.)
    await waitFor(
      "A to give its leases up and the pipelines to split again",
      async () => {
        if (!events.includes("A-p1") || !events.includes("A-p2")) return undefined;
        const now = await owners();
        const counts = ["A", "B"].map((id) => Object.values(now).filter((o) => o === id).length).sort();
        // …and each taker's work started (it holds the lock a moment before it is told).
        const told = [...a.ownedPipelines(), ...b.ownedPipelines()].sort();
        return counts[0] === 1 && counts[1] === 2 && JSON.stringify(told) === JSON.stringify(PIPELINES)
          ? true
          : undefined;
      },
      60_000,
    );
    expect(events.slice(0, 2).sort()).toEqual(["A-p1", "A-p2"]);
    for (const p of ["p1", "p2"]) {
      const taken = events.indexOf(`B+${p}`);
      if (taken >= 0) expect(events.indexOf(`A-${p}`)).toBeLessThan(taken);
    }
    expect([...a.ownedPipelines(), ...b.ownedPipelines()].sort()).toEqual(PIPELINES);

    // B stops: its work stops, its leases are freed, and A (alone again) takes them all.
    await b.stop();
    running.splice(running.indexOf(b), 1);
    await settled({ p1: "A", p2: "A", p3: "A", unknown: null });
    expect(b.ownedPipelines()).toEqual([]);
    await a.stop();
    running.splice(running.indexOf(a), 1);
  });

  // A 1 s heartbeat: C fences within 3 s, the server frees the lock after 5 s; the 2 s between hold on a busy machine.
  it(
    "a network gone silent under the owner: it fences after its heartbeat times out, the server frees its lease after 5 heartbeats, then another replica takes it",
    { timeout: 120_000 },
    async () => {
      const { url } = await getDb();
      const proxy = await startProxy(url);
      const events: string[] = [];
      const replica = (id: string, via: string) => {
        const leases: PipelineLeases = new PipelineLeases(
          via,
          ["q1"],
          { replicaId: id, heartbeatMs: 1_000 },
          {
            acquired: (p) => events.push(`${id}+${p}`),
            lost: async (p) => {
              events.push(`${id}-${p}${leases.owns(p) ? " (still owned)" : ""}`);
            },
          },
          createLogger(process.env.LEASE_LOG ?? "silent"),
        );
        running.push(leases);
        return leases;
      };
      const c = replica("C", proxy.url);
      await c.start();
      const d = replica("D", url);
      await d.start();
      expect([c.ownedPipelines(), d.ownedPipelines()]).toEqual([["q1"], []]);

      const silencedAt = Date.now();
      proxy.silence();
      const at: Record<string, number> = {};
      await waitFor(
        "D to take q1",
        async () => {
          for (const e of events) at[e] ??= Date.now() - silencedAt;
          return d.owns("q1") ? true : undefined;
        },
        60_000,
        10,
      );
      console.log(
        `[leases] network silent under C (heartbeat 1 s): C fenced after ${at["C-q1"]} ms, D took q1 after ${at["D+q1"]} ms`,
      );
      expect(events).toEqual(["C+q1", "C-q1", "D+q1"]);
      // C stops its work before the server can free the lock: its heartbeat fails after at most 3 heartbeats, the server waits 5.
      expect(c.ownedPipelines()).toEqual([]);
      await proxy.close();
    },
  );
});
