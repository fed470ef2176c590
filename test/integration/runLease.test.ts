/**
 * Correction runs hold a lease (src/correction/runLease.ts): a run that outlives
 * its lease is marked abandoned by the next look and rolls back, the next run
 * redoes its work; a heartbeat keeps a slow run alive; a cron slot is held only
 * by a run that succeeded or is running, so failed and abandoned slots run again.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { sweepExpiredRuns } from "../../src/correction/runLease.js";
import { LockNamespace, XACT_LOCK_SQL } from "../../src/db/locks.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { lateWithinDelay } from "../helpers/fixtures.js";
import { blockedOn, holdLock } from "../helpers/locks.js";
import { windowSummary } from "../helpers/results.js";
import { waitFor } from "../helpers/service.js";

const getDb = useTestDatabase();

/** The late-within-delay seed, file by file: [12:00,12:10) is 19 and awaits correction to 119 (the late 12:03 event). */
async function seeded(pool: Pool, name: string): Promise<PipelineConfig> {
  const p = lateWithinDelay(name);
  for (const f of ["1.json", "2.json", "3.json"]) {
    await landFile(pool, p, path.join(p.source.landingDir!, f), f);
    await runBatch(pool, p, "once");
  }
  return p;
}

const runsOf = async (pool: Pool, pipeline: string) =>
  (
    await pool.query(
      "SELECT run_id, cron_slot, status, windows_changed, error FROM straggler.correction_runs WHERE pipeline = $1 ORDER BY run_id",
      [pipeline],
    )
  ).rows;
const auditRuns = async (pool: Pool, pipeline: string) =>
  (
    await pool.query(
      "SELECT run_id, sum_before, sum_after FROM straggler.corrections WHERE pipeline = $1 ORDER BY run_id",
      [pipeline],
    )
  ).rows;
const REASON =
  /^lease expired at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z: the process running it stopped or lost the database before it finished; its changes were rolled back$/;
const HOLDER_GONE =
  /^holder gone at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(lease until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\): the process running it ended, its database session and holder lock with it, before it finished; its changes were rolled back$/;
const WINDOWS_BEFORE = [
  "[12:00,12:10)=19 final",
  "[12:10,12:20)=7 final",
  "[12:20,12:30)=3 final",
  "[12:40,12:50)=1 open",
];
const WINDOWS_AFTER = [
  "[12:00,12:10)=119 corrected",
  "[12:10,12:20)=7 final",
  "[12:20,12:30)=3 final",
  "[12:40,12:50)=1 open",
];

describe("correction run leases", () => {
  it("a run that outlives its lease is marked abandoned by the next look, rolls back, and the next run redoes its work", async () => {
    const { pool } = await getDb();
    const p = await seeded(pool, "lease-lost");
    expect(await windowSummary(pool, p.name)).toEqual(WINDOWS_BEFORE);
    // The run waits for the results lock with a 1 s lease that is never renewed in time.
    const lock = await holdLock(pool, XACT_LOCK_SQL, [LockNamespace.results, p.name]);
    const run = runCorrection(pool, p, { trigger: "cli" }, { leaseMs: 1_000, heartbeatMs: 3_600_000 });
    await blockedOn(pool, "%pg_advisory_xact_lock%");
    const runId = (await runsOf(pool, p.name))[0].run_id as number;
    // Readers see the expired run as abandoned before anyone has written it.
    const seen = await waitFor(
      "the lease to expire",
      async () => {
        const r = (
          await pool.query("SELECT status, error FROM straggler.correction_history WHERE run_id = $1", [runId])
        ).rows[0];
        return r.status === "abandoned" ? r : undefined;
      },
      10_000,
    );
    expect(seen.error).toMatch(REASON);
    expect(
      (await pool.query("SELECT status FROM straggler.correction_runs WHERE run_id = $1", [runId])).rows[0].status,
    ).toBe("running");
    expect(await sweepExpiredRuns(pool, p.name)).toEqual([runId]);
    expect(await sweepExpiredRuns(pool, p.name)).toEqual([]);
    await lock.release();
    const lost = await run;
    expect({ status: lost.status, runId: lost.runId, changes: lost.changes }).toEqual({
      status: "failed",
      runId,
      changes: [],
    });
    expect(lost.error).toBe(`run ${runId} was marked 'abandoned' while it worked (${seen.error}); it rolls back`);
    // It changed nothing: the window, the audit and the awaiting mark are as before.
    expect(await windowSummary(pool, p.name)).toEqual(WINDOWS_BEFORE);
    expect(await auditRuns(pool, p.name)).toEqual([]);
    expect(
      (
        await pool.query("SELECT count(*)::int AS n FROM straggler.windows_awaiting_correction WHERE pipeline = $1", [
          p.name,
        ])
      ).rows[0].n,
    ).toBe(1);

    const next = await runCorrection(pool, p, { trigger: "cli" });
    expect([
      next.status,
      next.windowsChanged,
      next.eventsRecovered,
      next.changes[0]?.after.sum,
      next.changes[0]?.revision,
    ]).toEqual(["succeeded", 1, 1, "119", 2]);
    expect(await windowSummary(pool, p.name)).toEqual(WINDOWS_AFTER);
    expect(await auditRuns(pool, p.name)).toEqual([{ run_id: next.runId, sum_before: "19", sum_after: "119" }]);
    expect(await runsOf(pool, p.name)).toEqual([
      { run_id: runId, cron_slot: null, status: "abandoned", windows_changed: null, error: seen.error },
      { run_id: next.runId, cron_slot: null, status: "succeeded", windows_changed: 1, error: null },
    ]);
    // The abandoned run ended when its lease did.
    const ended = (
      await pool.query(
        "SELECT finished_at = lease_until AS at_lease_end FROM straggler.correction_runs WHERE run_id = $1",
        [runId],
      )
    ).rows[0];
    expect(ended).toEqual({ at_lease_end: true });
  });

  it("the heartbeat keeps a slow run's lease alive well past its first lease; the run then succeeds", async () => {
    const { pool } = await getDb();
    const p = await seeded(pool, "lease-renewed");
    const lock = await holdLock(pool, XACT_LOCK_SQL, [LockNamespace.results, p.name]);
    const run = runCorrection(pool, p, { trigger: "cli" }, { leaseMs: 2_000 }); // renewed every 667 ms
    await blockedOn(pool, "%pg_advisory_xact_lock%");
    const first = (
      await pool.query("SELECT run_id, lease_until FROM straggler.correction_runs WHERE pipeline = $1", [p.name])
    ).rows[0];
    const later = await waitFor(
      "the database clock 2.5 s past the first lease",
      async () => {
        const r = (
          await pool.query(
            `SELECT clock_timestamp() > $2::timestamptz + interval '2500 ms' AS past, status, lease_until > $2::timestamptz AS renewed
             FROM straggler.correction_runs WHERE run_id = $1`,
            [first.run_id, first.lease_until],
          )
        ).rows[0];
        return r.past ? r : undefined;
      },
      20_000,
    );
    expect(later).toEqual({ past: true, status: "running", renewed: true });
    expect(await sweepExpiredRuns(pool, p.name)).toEqual([]);
    await lock.release();
    const done = await run;
    expect([done.status, done.runId, done.windowsChanged]).toEqual(["succeeded", first.run_id, 1]);
    expect(await windowSummary(pool, p.name)).toEqual(WINDOWS_AFTER);
  });
});

describe("cron slots", () => {
  it("a slot that succeeded or is running is skipped; a failed or abandoned slot runs again", async () => {
    const { pool } = await getDb();
    const p = await seeded(pool, "slots");
    const slot = (hh: string) => `2026-10-01T${hh}:00.000Z`;
    const cron = (s: string) => runCorrection(pool, p, { trigger: "cron", cronSlot: s });

    const ran = await cron(slot("13:00"));
    expect([ran.status, ran.windowsChanged]).toEqual(["succeeded", 1]);
    const again = await cron(slot("13:00"));
    expect({
      status: again.status,
      runId: again.runId,
      heldBy: { ...again.heldBy, leaseUntil: typeof again.heldBy?.leaseUntil },
    }).toEqual({
      status: "skipped",
      runId: null,
      heldBy: { runId: ran.runId, status: "succeeded", leaseUntil: "string" },
    });

    // A run that fails (its audit insert is refused) frees its slot: the retry in the same minute runs.
    await pool.query(
      `CREATE FUNCTION public.refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'audit refused'; END$$`,
    );
    await pool.query(
      `CREATE TRIGGER refuse_audit BEFORE INSERT ON straggler.corrections FOR EACH STATEMENT EXECUTE FUNCTION public.refuse_audit()`,
    );
    const failed = await cron(slot("13:01"));
    expect([failed.status, failed.error]).toEqual(["failed", "audit refused"]);
    await pool.query(`DROP TRIGGER refuse_audit ON straggler.corrections`);
    const retried = await cron(slot("13:01"));
    expect([retried.status, retried.windowsChanged]).toEqual(["succeeded", 0]);

    // A running run whose lease expired (its process died): swept to abandoned, the slot runs.
    const dead = (
      await pool.query(
        `INSERT INTO straggler.correction_runs (pipeline, trigger, cron_slot, status, lease_until)
       VALUES ($1, 'cron', $2, 'running', clock_timestamp() - interval '1 second') RETURNING run_id`,
        [p.name, slot("13:02")],
      )
    ).rows[0].run_id;
    const afterDead = await cron(slot("13:02"));
    expect(afterDead.status).toBe("succeeded");

    // A running run with a live lease whose holder is gone (no session holds its holder lock: its
    // process ended): swept to abandoned at once, the slot runs.
    const orphan = (
      await pool.query(
        `INSERT INTO straggler.correction_runs (pipeline, trigger, cron_slot, status, lease_until)
       VALUES ($1, 'cron', $2, 'running', clock_timestamp() + interval '1 hour') RETURNING run_id`,
        [p.name, slot("13:03")],
      )
    ).rows[0].run_id;
    const afterOrphan = await cron(slot("13:03"));
    expect(afterOrphan.status).toBe("succeeded");

    // A running run with a live lease and a live holder (another replica's, its session holding the lock): skipped.
    const replica = await pool.connect();
    const live = (
      await replica.query(
        `INSERT INTO straggler.correction_runs (pipeline, trigger, cron_slot, status, lease_until)
       VALUES ($1, 'cron', $2, 'running', clock_timestamp() + interval '1 hour') RETURNING run_id, lease_until`,
        [p.name, slot("13:04")],
      )
    ).rows[0];
    await replica.query("SELECT pg_advisory_lock($1, $2::int)", [LockNamespace.correctionRun, live.run_id]);
    const busy = await cron(slot("13:04"));
    expect([busy.status, busy.heldBy]).toEqual([
      "skipped",
      { runId: live.run_id, status: "running", leaseUntil: live.lease_until },
    ]);
    // The same replica's session gone: the next tick of that slot runs it.
    await replica.query("SELECT pg_advisory_unlock_all()");
    replica.release();
    const afterReplica = await cron(slot("13:04"));
    expect(afterReplica.status).toBe("succeeded");

    const reasonOf = (e: string | null) =>
      e === null ? null : REASON.test(e) ? "lease expired" : HOLDER_GONE.test(e) ? "holder gone" : e;
    const rows = (await runsOf(pool, p.name)).map((r) => [r.cron_slot, r.status, reasonOf(r.error)]);
    expect(rows).toEqual([
      [slot("13:00"), "succeeded", null],
      [slot("13:01"), "failed", "audit refused"],
      [slot("13:01"), "succeeded", null],
      [slot("13:02"), "abandoned", "lease expired"],
      [slot("13:02"), "succeeded", null],
      [slot("13:03"), "abandoned", "holder gone"],
      [slot("13:03"), "succeeded", null],
      [slot("13:04"), "abandoned", "holder gone"],
      [slot("13:04"), "succeeded", null],
    ]);
    expect((await runsOf(pool, p.name)).filter((r) => r.status === "abandoned").map((r) => r.run_id)).toEqual([
      dead,
      orphan,
      live.run_id,
    ]);
  });

  it("two replicas firing the same slot at once: one runs it, the other is skipped", async () => {
    const { pool } = await getDb();
    const p = await seeded(pool, "replicas");
    const slot = "2026-10-01T14:00:00.000Z";
    const both = await Promise.all([
      runCorrection(pool, p, { trigger: "cron", cronSlot: slot }),
      runCorrection(pool, p, { trigger: "cron", cronSlot: slot }),
    ]);
    expect(both.map((s) => s.status).sort()).toEqual(["skipped", "succeeded"]);
    const winner = both.find((s) => s.status === "succeeded")!;
    expect(both.find((s) => s.status === "skipped")!.heldBy?.runId).toBe(winner.runId);
    expect(await runsOf(pool, p.name)).toEqual([
      { run_id: winner.runId, cron_slot: slot, status: "succeeded", windows_changed: 1, error: null },
    ]);
  });
});
