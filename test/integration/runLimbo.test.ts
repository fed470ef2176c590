/**
 * No correction run left in limbo, with real processes: a `straggler correct`
 * killed with SIGKILL mid-run, and one that loses the database mid-run (a TCP
 * proxy cut between it and PostgreSQL), are both marked abandoned once their
 * lease expires, their changes rolled back, and the next run redoes the work.
 * `jobs/correct.ts` exits 0 for a run that succeeded or a slot already held,
 * 1 for a failed run, and runs a failed slot again.
 *
 * Each victim is stopped mid-run by holding a lock on the audit table: the
 * run blocks on its audit insert, after it has rewritten the window inside
 * its open transaction.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelines } from "../../src/config/pipelines.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { runCli, startCli } from "../helpers/cli.js";
import { startProxy } from "../helpers/tcpProxy.js";
import { useTestDatabase } from "../helpers/db.js";
import { REPO_ROOT, seedDir } from "../helpers/fixtures.js";
import { backendGone, blockedOn, holdLock } from "../helpers/locks.js";
import { LockNamespace } from "../../src/db/locks.js";
import { windowSummary } from "../helpers/results.js";
import { waitFor } from "../helpers/service.js";

const getDb = useTestDatabase();

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
const REASON =
  /^lease expired at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z: the process running it stopped or lost the database before it finished; its changes were rolled back$/;
const AUDIT_LOCK = "LOCK TABLE straggler.corrections IN EXCLUSIVE MODE";
const AUDIT_INSERT = "%INSERT INTO straggler.corrections%";

/** A pipelines file with the late-within-delay seed under `name` and a correction lease (1 second unless given); the seed landed and streamed file by file. */
async function setup(pool: Pool, name: string, lease = "1 second"): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-limbo-"));
  const file = path.join(dir, "pipelines.yaml");
  writeFileSync(
    file,
    `pipelines:
  - name: ${name}
    source: { landingDir: ${JSON.stringify(seedDir("late-within-delay"))}, format: jsonl }
    fields: { eventTime: event_time, value: amount }
    timestamps: { timeZone: UTC }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
    correction: { lease: ${lease} }
`,
  );
  const p = loadPipelines(file)[0]!;
  for (const f of ["1.json", "2.json", "3.json"]) {
    await landFile(pool, p, path.join(p.source.landingDir!, f), f);
    await runBatch(pool, p, "once");
  }
  expect(await windowSummary(pool, name)).toEqual(WINDOWS_BEFORE);
  return file;
}

const runsOf = async (pool: Pool, pipeline: string) =>
  (
    await pool.query(
      "SELECT run_id, status, windows_changed, error FROM straggler.correction_runs WHERE pipeline = $1 ORDER BY run_id",
      [pipeline],
    )
  ).rows;

/** Waits until the history view shows `runId` abandoned (its lease expired); returns the reason. */
const abandoned = (pool: Pool, runId: number) =>
  waitFor(
    "the run's lease to expire",
    async () => {
      const r = (await pool.query("SELECT status, error FROM straggler.correction_history WHERE run_id = $1", [runId]))
        .rows[0];
      return r.status === "abandoned" ? (r.error as string) : undefined;
    },
    60_000,
  );

/** After the victim is gone: nothing of it is visible, it is still `running`, then the next run sweeps it and redoes its work. */
async function expectAbandonedAndRedone(
  pool: Pool,
  name: string,
  env: Record<string, string>,
  runId: number,
): Promise<void> {
  expect(await windowSummary(pool, name)).toEqual(WINDOWS_BEFORE);
  expect(
    (await pool.query("SELECT count(*)::int AS n FROM straggler.corrections WHERE pipeline = $1", [name])).rows[0].n,
  ).toBe(0);
  expect(await runsOf(pool, name)).toEqual([{ run_id: runId, status: "running", windows_changed: null, error: null }]);
  const reason = await abandoned(pool, runId);
  expect(reason).toMatch(REASON);
  const out = await runCli(["correct", "-p", name], env);
  const next = Number(
    /correction run (\d+) succeeded: 1 windows examined, 1 changed, 1 late events recovered/.exec(out)?.[1],
  );
  expect(next).toBeGreaterThan(runId);
  expect(await windowSummary(pool, name)).toEqual(WINDOWS_AFTER);
  expect(await runsOf(pool, name)).toEqual([
    { run_id: runId, status: "abandoned", windows_changed: null, error: reason },
    { run_id: next, status: "succeeded", windows_changed: 1, error: null },
  ]);
  expect(
    (await pool.query("SELECT run_id, sum_before, sum_after FROM straggler.corrections WHERE pipeline = $1", [name]))
      .rows,
  ).toEqual([{ run_id: next, sum_before: "19", sum_after: "119" }]);
}

/** Runs the compiled `jobs/correct.ts` (dist/jobs/correct.js, as cron runs it) to the end. */
function job(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return startJob(args, env).done.then(({ code, stdout, stderr }) => ({ code, stdout, stderr }));
}

/** Starts `jobs/correct.ts <args>` as users run it, compiled: `node dist/jobs/correct.js`. */
function startJob(args: string[], env: Record<string, string>) {
  const child = spawn(
    process.execPath,
    ["--enable-source-maps", path.join(REPO_ROOT, "dist/jobs/correct.js"), ...args],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, LOG_LEVEL: "silent", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "",
    stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) => child.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

/** The backend pid of the session holding run `runId`'s holder lock (src/correction/runLease.ts), once it holds it. */
const holderPid = (pool: Pool, runId: number) =>
  waitFor(`the holder lock of run ${runId}`, async () => {
    const { rows } = await pool.query(
      "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = $1::int::oid AND objid = $2::int::oid",
      [LockNamespace.correctionRun, runId],
    );
    return rows[0]?.pid as number | undefined;
  });

const HOLDER_GONE =
  /^holder gone at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) \(lease until (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\): the process running it ended, its database session and holder lock with it, before it finished; its changes were rolled back$/;

describe("correction runs left in limbo", () => {
  it("a correction killed with SIGKILL mid-run is abandoned when its lease expires, and the next run redoes its work", async () => {
    const { pool, url } = await getDb();
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: await setup(pool, "killed") };
    const lock = await holdLock(pool, AUDIT_LOCK);
    const cli = startCli(["correct", "-p", "killed"], env);
    const pid = await blockedOn(pool, AUDIT_INSERT);
    const runId = (await runsOf(pool, "killed"))[0].run_id as number;
    cli.child.kill("SIGKILL");
    expect((await cli.done).signal).toBe("SIGKILL");
    await lock.release();
    await backendGone(pool, pid);
    await expectAbandonedAndRedone(pool, "killed", env, runId);
  }, 300_000);

  it("a correction that loses the database mid-run exits 1 naming the run and its lease; it is abandoned and redone", async () => {
    const { pool, url } = await getDb();
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: await setup(pool, "outage") };
    const proxy = await startProxy(url);
    const lock = await holdLock(pool, AUDIT_LOCK);
    const cli = startCli(["correct", "-p", "outage"], { ...env, DATABASE_URL: proxy.url });
    const pid = await blockedOn(pool, AUDIT_INSERT);
    const runId = (await runsOf(pool, "outage"))[0].run_id as number;
    await proxy.cut();
    await lock.release();
    const r = await cli.done;
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: "" });
    // Which of node-postgres' connection-loss messages the cut produces, for the run and for recording its failure,
    // depends on timing (and on how busy the machine is); the rest is exact.
    const host = new URL(proxy.url).host.replace(/[.]/g, "\\.");
    const lost =
      "Connection terminated unexpectedly|Connection terminated|Connection terminated due to connection timeout|(?:read|write) (?:ECONNRESET|EPIPE)" +
      "|Client has encountered a connection error and is not queryable|Client was closed and is not queryable";
    const unreachable = `connect ECONNREFUSED ${host}|timeout exceeded when trying to connect|${lost}`;
    expect(r.stderr).toMatch(
      new RegExp(
        `^straggler: correction run ${runId} of outage failed \\((?:${lost})\\) ` +
          `and its outcome could not be recorded \\((?:${unreachable})\\); it stays 'running' until its lease expires \\(within 1 s\\) or its holder's session ends, ` +
          "and is then marked abandoned: straggler\\.correction_history tells its outcome\\n" +
          // When recording the failure found no server, the CLI's hint of what to check follows (src/cli/dbHints.ts).
          "(?:straggler: nothing accepts connections there: check DATABASE_URL's host and port and that the server runs, " +
          "or unset DATABASE_URL to use the embedded PostgreSQL \\(started by the command that needs it\\)\\n)?$",
      ),
    );
    await backendGone(pool, pid);
    await expectAbandonedAndRedone(pool, "outage", env, runId);
  }, 300_000);

  it("jobs/correct.ts killed with SIGKILL mid-run: a retry of its slot meanwhile exits 3 (held by a live run), after the kill it runs at once, long before the lease ends", async () => {
    const { pool, url } = await getDb();
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: await setup(pool, "cron-killed", "1 hour") };
    const lock = await holdLock(pool, AUDIT_LOCK);
    const victim = startJob(["cron-killed", "--slot", "2026-10-01T16:00:00Z"], env);
    const txPid = await blockedOn(pool, AUDIT_INSERT);
    const runId = (await runsOf(pool, "cron-killed"))[0].run_id as number;
    const holder = await holderPid(pool, runId);
    expect(holder).not.toBe(txPid);
    const leaseUntil = (
      await pool.query("SELECT lease_until FROM straggler.correction_runs WHERE run_id = $1", [runId])
    ).rows[0].lease_until as string;

    // While the victim lives, a retry of its slot is skipped with exit 3: the work is not done.
    expect(await job(["cron-killed", "--slot", "2026-10-01T16:00:00Z"], env)).toEqual({
      code: 3,
      stdout: `cron-killed: skipped: correction slot being run by run ${runId} (its holder's session is alive; lease until ${leaseUntil}): not done yet\n`,
      stderr: "",
    });

    victim.child.kill("SIGKILL");
    expect((await victim.done).signal).toBe("SIGKILL");
    await lock.release();
    await backendGone(pool, holder);
    await backendGone(pool, txPid);
    expect(await runsOf(pool, "cron-killed")).toEqual([
      { run_id: runId, status: "running", windows_changed: null, error: null },
    ]);

    // The lease has most of an hour to run; the retry sees the holder gone and runs the slot.
    const retried = await job(["cron-killed", "--slot", "2026-10-01T16:00:00Z"], env);
    const [, retriedId] = /^cron-killed: run (\d+) succeeded/.exec(retried.stdout) ?? [];
    expect(retried).toEqual({
      code: 0,
      stdout: `cron-killed: run ${retriedId} succeeded, 1 windows changed, 1 late events recovered\n`,
      stderr: "",
    });
    expect(Number(retriedId)).toBeGreaterThan(runId);
    expect(await windowSummary(pool, "cron-killed")).toEqual(WINDOWS_AFTER);
    const runs = await runsOf(pool, "cron-killed");
    expect(runs.map((r) => [r.run_id, r.status, r.windows_changed])).toEqual([
      [runId, "abandoned", null],
      [Number(retriedId), "succeeded", 1],
    ]);
    const [, goneAt, until] = HOLDER_GONE.exec(runs[0].error) ?? [];
    expect(until).toBe(`${leaseUntil.slice(0, 23)}Z`); // the reason names the lease to the millisecond
    expect(Date.parse(goneAt!)).toBeLessThan(Date.parse(leaseUntil));
    expect(
      (
        await pool.query(
          "SELECT run_id, sum_before, sum_after FROM straggler.corrections WHERE pipeline = 'cron-killed'",
        )
      ).rows,
    ).toEqual([{ run_id: Number(retriedId), sum_before: "19", sum_after: "119" }]);
  }, 120_000);

  it("jobs/correct.ts: exit 0 for a run and for a slot already run, 1 for a failed run; a retry of the failed slot runs", async () => {
    const { pool, url } = await getDb();
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: await setup(pool, "job") };
    const first = await job(["job", "--slot", "2026-10-01T15:00:00Z"], env);
    const [, firstId] = /^job: run (\d+) succeeded/.exec(first.stdout) ?? [];
    expect(first).toEqual({
      code: 0,
      stdout: `job: run ${firstId} succeeded, 1 windows changed, 1 late events recovered\n`,
      stderr: "",
    });
    expect(await job(["job", "--slot", "2026-10-01T15:00:00Z"], env)).toEqual({
      code: 0,
      stdout: `job: skipped: correction slot already run: run ${firstId} succeeded\n`,
      stderr: "",
    });

    await pool.query(
      `CREATE FUNCTION public.refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'audit refused'; END$$`,
    );
    await pool.query(
      `CREATE TRIGGER refuse_audit BEFORE INSERT ON straggler.corrections FOR EACH STATEMENT EXECUTE FUNCTION public.refuse_audit()`,
    );
    const failed = await job(["job", "--slot", "2026-10-01T15:01:00Z"], env);
    const [, failedId] = /^job: run (\d+) failed/.exec(failed.stdout) ?? [];
    expect(failed).toEqual({
      code: 1,
      stdout: `job: run ${failedId} failed, 0 windows changed, 0 late events recovered — audit refused\n`,
      stderr: "",
    });
    await pool.query(`DROP TRIGGER refuse_audit ON straggler.corrections`);
    const retried = await job(["job", "--slot", "2026-10-01T15:01:00Z"], env);
    const [, retriedId] = /^job: run (\d+) succeeded/.exec(retried.stdout) ?? [];
    expect(retried).toEqual({
      code: 0,
      stdout: `job: run ${retriedId} succeeded, 0 windows changed, 0 late events recovered\n`,
      stderr: "",
    });
    expect(Number(retriedId)).toBeGreaterThan(Number(failedId));

    expect(await job(["job", "--slot", "2026-10-01T15:02:30Z"], env)).toEqual({
      code: 2,
      stdout: "",
      stderr:
        'jobs/correct: --slot: expected an ISO 8601 instant with a zone on a whole minute, such as 2026-10-01T12:00:00Z; got "2026-10-01T15:02:30Z"\n',
    });
    const slots = (
      await pool.query("SELECT cron_slot, status FROM straggler.correction_runs WHERE pipeline = 'job' ORDER BY run_id")
    ).rows;
    expect(slots).toEqual([
      { cron_slot: "2026-10-01T15:00:00.000Z", status: "succeeded" },
      { cron_slot: "2026-10-01T15:01:00.000Z", status: "failed" },
      { cron_slot: "2026-10-01T15:01:00.000Z", status: "succeeded" },
    ]);
  }, 300_000);
});
