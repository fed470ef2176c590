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
import { windowSummary } from "../helpers/results.js";
import { waitFor } from "../helpers/service.js";

const getDb = useTestDatabase();

const WINDOWS_BEFORE = ["[12:00,12:10)=19 final", "[12:10,12:20)=7 final", "[12:20,12:30)=3 final", "[12:40,12:50)=1 open"];
const WINDOWS_AFTER = ["[12:00,12:10)=119 corrected", "[12:10,12:20)=7 final", "[12:20,12:30)=3 final", "[12:40,12:50)=1 open"];
const REASON = /^lease expired at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z: the process running it stopped or lost the database before it finished; its changes were rolled back$/;
const AUDIT_LOCK = "LOCK TABLE straggler.corrections IN EXCLUSIVE MODE";
const AUDIT_INSERT = "%INSERT INTO straggler.corrections%";

/** A pipelines file with the late-within-delay seed under `name` and a 1-second correction lease; the seed landed and streamed file by file. */
async function setup(pool: Pool, name: string): Promise<string> {
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
    correction: { lease: 1 second }
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
  (await pool.query("SELECT run_id, status, windows_changed, error FROM straggler.correction_runs WHERE pipeline = $1 ORDER BY run_id", [pipeline])).rows;

/** Waits until the history view shows `runId` abandoned (its lease expired); returns the reason. */
const abandoned = (pool: Pool, runId: number) =>
  waitFor("the run's lease to expire", async () => {
    const r = (await pool.query("SELECT status, error FROM straggler.correction_history WHERE run_id = $1", [runId])).rows[0];
    return r.status === "abandoned" ? (r.error as string) : undefined;
  }, 10_000);

/** After the victim is gone: nothing of it is visible, it is still `running`, then the next run sweeps it and redoes its work. */
async function expectAbandonedAndRedone(pool: Pool, name: string, env: Record<string, string>, runId: number): Promise<void> {
  expect(await windowSummary(pool, name)).toEqual(WINDOWS_BEFORE);
  expect((await pool.query("SELECT count(*)::int AS n FROM straggler.corrections WHERE pipeline = $1", [name])).rows[0].n).toBe(0);
  expect(await runsOf(pool, name)).toEqual([{ run_id: runId, status: "running", windows_changed: null, error: null }]);
  const reason = await abandoned(pool, runId);
  expect(reason).toMatch(REASON);
  const out = await runCli(["correct", "-p", name], env);
  const next = Number(/correction run (\d+) succeeded: 1 windows examined, 1 changed, 1 late events recovered/.exec(out)?.[1]);
  expect(next).toBeGreaterThan(runId);
  expect(await windowSummary(pool, name)).toEqual(WINDOWS_AFTER);
  expect(await runsOf(pool, name)).toEqual([
    { run_id: runId, status: "abandoned", windows_changed: null, error: reason },
    { run_id: next, status: "succeeded", windows_changed: 1, error: null },
  ]);
  expect((await pool.query("SELECT run_id, sum_before, sum_after FROM straggler.corrections WHERE pipeline = $1", [name])).rows).toEqual([
    { run_id: next, sum_before: "19", sum_after: "119" },
  ]);
}

/** Runs the compiled `jobs/correct.ts` (dist/jobs/correct.js, as cron runs it) to the end. */
function job(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--enable-source-maps", path.join(REPO_ROOT, "dist/jobs/correct.js"), ...args], {
    cwd: REPO_ROOT, env: { ...process.env, LOG_LEVEL: "silent", ...env }, stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "", stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
}

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
  }, 60_000);

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
    // Which of node-postgres' connection-loss messages the cut produces depends on timing; the rest is exact.
    const host = new URL(proxy.url).host.replace(/[.]/g, "\\.");
    expect(r.stderr).toMatch(
      new RegExp(
        `^straggler: correction run ${runId} of outage failed \\((Connection terminated unexpectedly|Connection terminated|read ECONNRESET|Client has encountered a connection error and is not queryable)\\) ` +
          `and its outcome could not be recorded \\(connect ECONNREFUSED ${host}\\); it stays 'running' until its lease expires \\(within 1 s\\) ` +
          "and is then marked abandoned: straggler\\.correction_history tells its outcome\\n$",
      ),
    );
    await backendGone(pool, pid);
    await expectAbandonedAndRedone(pool, "outage", env, runId);
  }, 60_000);

  it("jobs/correct.ts: exit 0 for a run and for a slot already run, 1 for a failed run; a retry of the failed slot runs", async () => {
    const { pool, url } = await getDb();
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: await setup(pool, "job") };
    const first = await job(["job", "--slot", "2026-10-01T15:00:00Z"], env);
    const [, firstId] = /^job: run (\d+) succeeded/.exec(first.stdout) ?? [];
    expect(first).toEqual({ code: 0, stdout: `job: run ${firstId} succeeded, 1 windows changed, 1 late events recovered\n`, stderr: "" });
    expect(await job(["job", "--slot", "2026-10-01T15:00:00Z"], env)).toEqual({
      code: 0, stdout: `job: skipped: correction slot already run: run ${firstId} succeeded\n`, stderr: "",
    });

    await pool.query(`CREATE FUNCTION public.refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'audit refused'; END$$`);
    await pool.query(`CREATE TRIGGER refuse_audit BEFORE INSERT ON straggler.corrections FOR EACH STATEMENT EXECUTE FUNCTION public.refuse_audit()`);
    const failed = await job(["job", "--slot", "2026-10-01T15:01:00Z"], env);
    const [, failedId] = /^job: run (\d+) failed/.exec(failed.stdout) ?? [];
    expect(failed).toEqual({ code: 1, stdout: `job: run ${failedId} failed, 0 windows changed, 0 late events recovered — audit refused\n`, stderr: "" });
    await pool.query(`DROP TRIGGER refuse_audit ON straggler.corrections`);
    const retried = await job(["job", "--slot", "2026-10-01T15:01:00Z"], env);
    const [, retriedId] = /^job: run (\d+) succeeded/.exec(retried.stdout) ?? [];
    expect(retried).toEqual({ code: 0, stdout: `job: run ${retriedId} succeeded, 0 windows changed, 0 late events recovered\n`, stderr: "" });
    expect(Number(retriedId)).toBeGreaterThan(Number(failedId));

    expect(await job(["job", "--slot", "2026-10-01T15:02:30Z"], env)).toEqual({
      code: 2, stdout: "",
      stderr: 'jobs/correct: --slot: expected an ISO 8601 instant with a zone on a whole minute, such as 2026-10-01T12:00:00Z; got "2026-10-01T15:02:30Z"\n',
    });
    const slots = (await pool.query("SELECT cron_slot, status FROM straggler.correction_runs WHERE pipeline = 'job' ORDER BY run_id")).rows;
    expect(slots).toEqual([
      { cron_slot: "2026-10-01T15:00:00.000Z", status: "succeeded" },
      { cron_slot: "2026-10-01T15:01:00.000Z", status: "failed" },
      { cron_slot: "2026-10-01T15:01:00.000Z", status: "succeeded" },
    ]);
  }, 60_000);
});
