/**
 * Fencing (src/cluster/fencing.ts), with real connections: two replicas' leases
 * (A and B, heartbeat 200 ms) on one database. A holds a pipeline's lease and
 * has work in flight — a micro-batch waiting for the results lock, a folder
 * landing or a log landing waiting for the append lock — when its lease
 * session is ended by the server (pg_terminate_backend). The lease is taken
 * again (by B, or by A reconnected: a new epoch either way); A's work then
 * reaches its fence and rolls back with LeaseLostError, committing nothing;
 * the new owner commits the same work once. The bookkeeping of owned work is
 * fenced too: a deposed owner records no file's state (waiting, refused,
 * changed) and quarantines no failing window's rows. Epochs only grow (a sequence). A writer that passed its fence
 * before a taking commits first: the taking waits for it.
 */
import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { assertLeaseHeld, LeaseLostError, type PipelineLease } from "../../src/cluster/fencing.js";
import { PipelineLeases } from "../../src/cluster/leases.js";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { LockNamespace, XACT_LOCK_SQL } from "../../src/db/locks.js";
import type { Pool } from "../../src/db/pool.js";
import { readLogOffsets } from "../../src/db/sql/ingest/logOffsets.js";
import { landFile } from "../../src/ingest/landFile.js";
import { landPendingFiles } from "../../src/ingest/landingFolder.js";
import { landLogBatch } from "../../src/sources/landLogBatch.js";
import type { LogBatch } from "../../src/sources/logSource.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { blockedOn, holdLock } from "../helpers/locks.js";
import { checkpoint } from "../helpers/results.js";
import { waitFor } from "../helpers/service.js";

const getDb = useTestDatabase();
const T0 = Date.parse("2026-11-30T10:00:00Z");
const N = 100;

/** N events, one a second from T0, 4 keys, v = 0..N-1 (sum 4950): JSON lines. */
const eventLines = () =>
  Array.from({ length: N }, (_, i) =>
    JSON.stringify({ id: `e${i}`, t: new Date(T0 + i * 1000).toISOString(), k: `k${i % 4}`, v: i }),
  );

function fencedPipeline(name: string, landingDir?: string): PipelineConfig {
  return pipeline({
    name,
    source: { format: "jsonl", ...(landingDir ? { landingDir } : {}) },
    fields: { eventId: "id", eventTime: "t", groupKey: "k", value: "v" },
    window: { type: "tumbling", size: "1 minute" },
    watermark: { delay: "30 seconds" },
    trigger: { interval: "200 milliseconds", maxRowsPerBatch: 1000 },
  });
}

interface Replica {
  id: string;
  leases: PipelineLeases;
  /** `+p@epoch` taken, `-p` lost, in order. */
  events: string[];
  /** Its log lines at info and above (JSON). */
  logs: string[];
}

const running: PipelineLeases[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((l) => l.stop()));
});

async function startReplica(url: string, id: string, pipelines: string[]): Promise<Replica> {
  const events: string[] = [];
  const logs: string[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => void logs.push(line) });
  const leases = new PipelineLeases(
    url,
    pipelines,
    { replicaId: id, heartbeatMs: 200 },
    {
      acquired: (p, lease) => events.push(`+${p}@${lease.epoch}`),
      lost: async (p) => void events.push(`-${p}`),
    },
    log,
  );
  running.push(leases);
  await leases.start();
  return { id, leases, events, logs };
}

/** Two replicas on `name`: A starts first and owns it, B waits as the other replica. */
async function twoReplicas(url: string, name: string): Promise<{ a: Replica; b: Replica; leaseA: PipelineLease }> {
  const a = await startReplica(url, "A", [name]);
  const b = await startReplica(url, "B", [name]);
  const leaseA = a.leases.lease(name)!;
  expect([a.events, b.events]).toEqual([[`+${name}@${leaseA.epoch}`], []]);
  return { a, b, leaseA };
}

/**
 * Ends A's lease session on the server (as a network cut or a restart would) and waits
 * until the pipeline is owned again under a new epoch, by B or by A reconnected.
 * @returns the new lease
 */
async function depose(pool: Pool, a: Replica, b: Replica, name: string, old: PipelineLease): Promise<PipelineLease> {
  const { rows } = await pool.query(
    "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'straggler replica A'",
  );
  expect(rows).toEqual([{ ok: true }]);
  const next = await waitFor(
    `${name} owned again under a new epoch`,
    async () => {
      const lease = b.leases.lease(name) ?? a.leases.lease(name);
      return lease && lease.epoch !== old.epoch ? lease : undefined;
    },
    20_000,
    20,
  );
  expect(BigInt(next.epoch) > BigInt(old.epoch)).toBe(true);
  return next;
}

async function bronzeRows(pool: Pool, name: string): Promise<number> {
  const { rows } = await pool.query("SELECT count(*)::int AS n FROM straggler.bronze WHERE pipeline = $1", [name]);
  return rows[0].n;
}

async function resultTotals(pool: Pool, name: string): Promise<{ events: number; sum: number }> {
  const { rows } = await pool.query(
    "SELECT coalesce(sum(event_count), 0)::int AS events, coalesce(sum(value_sum), 0)::int AS sum FROM straggler.window_results WHERE pipeline = $1",
    [name],
  );
  return rows[0];
}

/** A's log line for its rolled-back commit under `old`, the pipeline now at `next`. */
const rolledBackLine = (a: Replica, old: PipelineLease, next: PipelineLease) =>
  a.logs
    .map((l) => JSON.parse(l) as { msg: string })
    .find((l) =>
      l.msg.startsWith(
        `lease lost: pipeline ${old.pipeline}: the lease of epoch ${old.epoch} is no longer held (epoch ${next.epoch}, taken by `,
      ),
    )?.msg;

describe("fencing: a deposed owner commits nothing", () => {
  it(
    "a micro-batch in flight when its lease is taken over rolls back; the new owner's batch moves the checkpoint once",
    { timeout: 300_000 },
    async () => {
      const { pool, url } = await getDb();
      const name = "fenced_batch";
      const p = fencedPipeline(name);
      const file = path.join(mkdtempSync(path.join(tmpdir(), "straggler-fencing-")), "events.jsonl");
      writeFileSync(file, eventLines().join("\n") + "\n");
      await landFile(pool, p, file, "events.jsonl");
      expect(await checkpoint(pool, name)).toBeUndefined(); // no batch yet: the first is batch 0
      const { a, b, leaseA } = await twoReplicas(url, name);

      // A's batch is in flight: inside its transaction, waiting for the results lock the test holds.
      const results = await holdLock(pool, XACT_LOCK_SQL, [LockNamespace.results, name]);
      const batchA = runBatch(pool, p, "interval", { lease: leaseA }).then(
        () => "committed",
        (e: unknown) => e,
      );
      await blockedOn(pool, "%pg_advisory_xact_lock%");
      const next = await depose(pool, a, b, name, leaseA);
      expect(leaseA.owns()).toBe(false);
      await results.release();

      const outcome = await batchA;
      expect(outcome).toBeInstanceOf(LeaseLostError);
      expect((outcome as LeaseLostError).message).toMatch(
        new RegExp(
          `^pipeline ${name}: the lease of epoch ${leaseA.epoch} is no longer held \\(epoch ${next.epoch}, taken by [AB]\\); the transaction rolled back and nothing of it was committed$`,
        ),
      );
      expect(await checkpoint(pool, name)).toBeUndefined();
      const {
        rows: [{ n: none }],
      } = await pool.query("SELECT count(*)::int AS n FROM straggler.batch_progress WHERE pipeline = $1", [name]);
      expect(none).toBe(0);
      expect(await resultTotals(pool, name)).toEqual({ events: 0, sum: 0 });
      expect(rolledBackLine(a, leaseA, next)).toBeDefined();

      // The new owner's batch takes every row, once.
      const progress = await runBatch(pool, p, "interval", { lease: next });
      expect([progress?.batchId, progress?.numInputRows]).toEqual([0, N]);
      expect(await runBatch(pool, p, "interval", { lease: next })).toBeNull();
      const {
        rows: [{ max }],
      } = await pool.query("SELECT max(seq)::int AS max FROM straggler.bronze WHERE pipeline = $1", [name]);
      expect((await checkpoint(pool, name)).batch_id).toBe(0);
      expect(Number((await checkpoint(pool, name)).last_offset)).toBe(max);
      const {
        rows: [{ n }],
      } = await pool.query("SELECT count(*)::int AS n FROM straggler.batch_progress WHERE pipeline = $1", [name]);
      expect(n).toBe(1);
      expect(await resultTotals(pool, name)).toEqual({ events: N, sum: 4950 });
    },
  );

  it(
    "a taking waits for a writer that passed its fence: that writer commits first, the new epoch comes after",
    { timeout: 300_000 },
    async () => {
      const { pool, url } = await getDb();
      const name = "fenced_order";
      const { a, b, leaseA } = await twoReplicas(url, name);
      // A writer of epoch 1 past its fence, not yet committed (a paused process): it holds the token's row.
      const writer = await pool.connect();
      await writer.query("BEGIN");
      await assertLeaseHeld(writer, name, leaseA.epoch);
      await pool.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'straggler replica A'",
      );
      // The lock is free, but no replica can raise the epoch: each try gives the lock back after its lock_timeout (200 ms).
      const givenBack = () =>
        b.logs
          .concat(a.logs)
          .filter((l) => l.includes("lease not taken: a commit of the previous owner still holds its fencing token"))
          .length;
      // Three tries given back (not a fixed wait): the taking keeps failing while the writer holds the token.
      await waitFor(
        "three tries of the taking given back",
        async () => (givenBack() >= 3 ? true : undefined),
        120_000,
        20,
      );
      expect([a.leases.ownedPipelines(), b.leases.ownedPipelines()]).toEqual([[], []]);
      const { rows: held } = await pool.query("SELECT epoch::text FROM straggler.pipeline_leases WHERE pipeline = $1", [
        name,
      ]);
      expect(held).toEqual([{ epoch: leaseA.epoch }]);
      await writer.query("COMMIT");
      writer.release();
      const next = await waitFor(
        "the taking after the writer's commit",
        async () => b.leases.lease(name) ?? a.leases.lease(name),
        120_000,
        20,
      );
      expect(BigInt(next.epoch) > BigInt(leaseA.epoch)).toBe(true);
    },
  );

  it(
    "a folder landing of a deposed owner rolls back; the new owner lands the file once",
    { timeout: 300_000 },
    async () => {
      const { pool, url } = await getDb();
      const name = "fenced_folder";
      const dir = mkdtempSync(path.join(tmpdir(), "straggler-fencing-"));
      const p = fencedPipeline(name, dir);
      writeFileSync(path.join(dir, "events.jsonl"), eventLines().join("\n") + "\n");
      utimesSync(path.join(dir, "events.jsonl"), new Date(T0), new Date(T0)); // settled long ago
      const { a, b, leaseA } = await twoReplicas(url, name);

      // A's landing pass is under way: its landing waits for the append lock the test holds.
      const append = await holdLock(pool, XACT_LOCK_SQL, [LockNamespace.bronzeAppend, name]);
      const passA = landPendingFiles(pool, p, { lease: leaseA }).then(
        () => "landed",
        (e: unknown) => e,
      );
      const next = await depose(pool, a, b, name, leaseA);
      await append.release();

      expect(await passA).toBeInstanceOf(LeaseLostError);
      expect(await bronzeRows(pool, name)).toBe(0);
      const { rows: files } = await pool.query("SELECT state FROM straggler.source_files WHERE pipeline = $1", [name]);
      expect(files).toEqual([]);
      expect(rolledBackLine(a, leaseA, next)).toBeDefined();

      const pass = await landPendingFiles(pool, p, { lease: next });
      expect(pass.landed.map((r) => [r.source, r.landed])).toEqual([["events.jsonl", N]]);
      expect((await landPendingFiles(pool, p, { lease: next })).unchanged).toEqual(["events.jsonl"]);
      expect(await bronzeRows(pool, name)).toBe(N);
      const { rows: landed } = await pool.query("SELECT state, rows FROM straggler.source_files WHERE pipeline = $1", [
        name,
      ]);
      expect(landed).toEqual([{ state: "landed", rows: N }]);
    },
  );

  it(
    "a log landing of a deposed owner rolls back and moves no offset; the new owner lands the batch once",
    { timeout: 300_000 },
    async () => {
      const { pool, url } = await getDb();
      const name = "fenced_log";
      const p = fencedPipeline(name);
      const log = "nats:FENCED";
      const batch: LogBatch = {
        messages: eventLines().map((line, i) => ({
          partition: "",
          offset: BigInt(i + 1),
          data: Buffer.from(line),
          eventId: `${log}:${i + 1}`,
          storedUs: BigInt(T0) * 1000n,
        })),
        position: BigInt(N),
      };
      const { a, b, leaseA } = await twoReplicas(url, name);

      const append = await holdLock(pool, XACT_LOCK_SQL, [LockNamespace.bronzeAppend, name]);
      const landingA = landLogBatch(pool, p, log, batch, { lease: leaseA }).then(
        () => "landed",
        (e: unknown) => e,
      );
      const next = await depose(pool, a, b, name, leaseA);
      await append.release();

      expect(await landingA).toBeInstanceOf(LeaseLostError);
      expect(await bronzeRows(pool, name)).toBe(0);
      expect(await readLogOffsets(pool, name, log)).toEqual(new Map());
      expect(rolledBackLine(a, leaseA, next)).toBeDefined();

      // The message was not acknowledged: redelivered to the new owner, it lands once.
      const r = await landLogBatch(pool, p, log, batch, { lease: next });
      expect([r.landed, r.alreadyLanded]).toEqual([N, 0]);
      const again = await landLogBatch(pool, p, log, batch, { lease: next });
      expect([again.landed, again.alreadyLanded]).toEqual([0, N]);
      expect(await bronzeRows(pool, name)).toBe(N);
      expect(await readLogOffsets(pool, name, log)).toEqual(
        new Map([
          ["", BigInt(N)],
          ["*", BigInt(N)],
        ]),
      );
    },
  );
});

/** A's "lease lost" log lines for commits under `old` rolled back while the pipeline is at `next`. */
const rolledBackLines = (a: Replica, old: PipelineLease, next: PipelineLease) =>
  a.logs
    .map((l) => JSON.parse(l) as { msg: string })
    .filter((l) =>
      l.msg.startsWith(
        `lease lost: pipeline ${old.pipeline}: the lease of epoch ${old.epoch} is no longer held (epoch ${next.epoch}, taken by `,
      ),
    ).length;

async function sourceFiles(
  pool: Pool,
  name: string,
): Promise<Array<{ name: string; state: string; reason: string | null }>> {
  const { rows } = await pool.query(
    "SELECT name, state, reason FROM straggler.source_files WHERE pipeline = $1 ORDER BY name",
    [name],
  );
  return rows;
}

describe("fencing: a deposed owner writes no bookkeeping", () => {
  it(
    "a landing pass of a deposed owner records no file as waiting, refused, touched or changed; the new owner's pass records each",
    { timeout: 300_000 },
    async () => {
      const { pool, url } = await getDb();
      const name = "fenced_files";
      const dir = mkdtempSync(path.join(tmpdir(), "straggler-fencing-"));
      const p = fencedPipeline(name, dir);
      const { a, b, leaseA } = await twoReplicas(url, name);
      const next = await depose(pool, a, b, name, leaseA);
      const early = { nowMs: () => T0 + 1000 }; // 1 s after the files' mtime: not settled (settle 2 s)
      const late = { nowMs: () => T0 + 60_000 };
      const lost = (e: unknown) =>
        expect((e as Error).message).toMatch(
          new RegExp(
            `^pipeline ${name}: the lease of epoch ${leaseA.epoch} is no longer held \\(epoch ${next.epoch}, taken by [AB]\\); the transaction rolled back`,
          ),
        );
      const file = path.join(dir, "events.jsonl");
      writeFileSync(file, eventLines().join("\n") + "\n");
      utimesSync(file, new Date(T0), new Date(T0));

      // waiting_to_settle
      const waiting = await landPendingFiles(pool, p, { lease: leaseA, ...early }).then(
        () => "recorded",
        (e: unknown) => e,
      );
      expect(waiting).toBeInstanceOf(LeaseLostError);
      lost(waiting);
      expect(await sourceFiles(pool, name)).toEqual([]);
      expect(rolledBackLines(a, leaseA, next)).toBe(1);
      expect((await landPendingFiles(pool, p, { lease: next, ...early })).waiting).toEqual(["events.jsonl"]);
      expect(await sourceFiles(pool, name)).toEqual([
        { name: "events.jsonl", state: "waiting_to_settle", reason: null },
      ]);

      // refused: not a regular file
      mkdirSync(path.join(dir, "folder.jsonl"));
      const refused = await landPendingFiles(pool, p, { lease: leaseA, ...early }).then(
        () => "recorded",
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(LeaseLostError);
      lost(refused);
      expect(await sourceFiles(pool, name)).toEqual([
        { name: "events.jsonl", state: "waiting_to_settle", reason: null },
      ]);
      expect(rolledBackLines(a, leaseA, next)).toBe(2);
      const pass = await landPendingFiles(pool, p, { lease: next, ...early });
      expect([pass.waiting, pass.refused]).toEqual([
        ["events.jsonl"],
        [{ name: "folder.jsonl", reason: "not a regular file: a directory" }],
      ]);
      expect(await sourceFiles(pool, name)).toEqual([
        { name: "events.jsonl", state: "waiting_to_settle", reason: null },
        { name: "folder.jsonl", state: "refused", reason: "not a regular file: a directory" },
      ]);

      // changed_after_landing
      expect(
        (await landPendingFiles(pool, p, { lease: next, ...late })).landed.map((r) => [r.source, r.landed]),
      ).toEqual([["events.jsonl", N]]);
      // touched: a new mtime, the same bytes (the record's mtime moves)
      const mtime = async () =>
        Number(
          (
            await pool.query(
              "SELECT (extract(epoch FROM mtime) * 1000)::bigint AS ms FROM straggler.source_files WHERE pipeline = $1 AND name = 'events.jsonl'",
              [name],
            )
          ).rows[0].ms,
        );
      expect(await mtime()).toBe(T0);
      utimesSync(file, new Date(T0 + 3000), new Date(T0 + 3000));
      const touched = await landPendingFiles(pool, p, { lease: leaseA, ...late }).then(
        () => "recorded",
        (e: unknown) => e,
      );
      expect(touched).toBeInstanceOf(LeaseLostError);
      lost(touched);
      expect(await mtime()).toBe(T0);
      expect((await landPendingFiles(pool, p, { lease: next, ...late })).unchanged).toEqual(["events.jsonl"]);
      expect(await mtime()).toBe(T0 + 3000);
      writeFileSync(file, eventLines().slice(0, 10).join("\n") + "\n");
      utimesSync(file, new Date(T0 + 5000), new Date(T0 + 5000));
      const changed = await landPendingFiles(pool, p, { lease: leaseA, ...late }).then(
        () => "recorded",
        (e: unknown) => e,
      );
      expect(changed).toBeInstanceOf(LeaseLostError);
      lost(changed);
      const landedState = [
        { name: "events.jsonl", state: "landed", reason: null },
        { name: "folder.jsonl", state: "refused", reason: "not a regular file: a directory" },
      ];
      expect(await sourceFiles(pool, name)).toEqual(landedState);
      expect(rolledBackLines(a, leaseA, next)).toBe(4);
      expect((await landPendingFiles(pool, p, { lease: next, ...late })).changed).toEqual(["events.jsonl"]);
      expect((await sourceFiles(pool, name))[0]).toMatchObject({
        name: "events.jsonl",
        state: "changed_after_landing",
      });
      expect(await bronzeRows(pool, name)).toBe(N);
    },
  );

  it(
    "a failing window's quarantine by a deposed owner writes nothing; the new owner's batch quarantines its rows once",
    { timeout: 300_000 },
    async () => {
      const { pool, url } = await getDb();
      const name = "fenced_quarantine";
      const p = fencedPipeline(name);
      // Two accepted values whose sum overflows numeric (accepted under an older policy without a value bound), one ordinary.
      for (const [i, r] of [
        { id: "big1", k: "k0", v: "9e131071" },
        { id: "big2", k: "k0", v: "9e131071" },
        { id: "ok", k: "k1", v: "5" },
      ].entries()) {
        await pool.query(
          `INSERT INTO straggler.bronze_events (pipeline, source_id, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status)
         VALUES ($1, straggler.bronze_source_id($1, 'old'), $2, $3, $4, $5, $5, $6, $7, 'accepted')`,
          [name, i + 1, r.id, JSON.stringify(r), new Date(T0 + i * 1000).toISOString(), r.k, r.v],
        );
      }
      await pool.query(
        "INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined) VALUES ($1, 'old', 'x', 3, 3, 0)",
        [name],
      );
      const statuses = async () =>
        (
          await pool.query("SELECT event_id, status FROM straggler.bronze_events WHERE pipeline = $1 ORDER BY seq", [
            name,
          ])
        ).rows.map((r) => `${r.event_id} ${r.status}`);
      const failures = async () =>
        (
          await pool.query(
            "SELECT group_key, phase, batch_id, quarantined_rows FROM straggler.window_failures WHERE pipeline = $1",
            [name],
          )
        ).rows;
      const { a, b, leaseA } = await twoReplicas(url, name);
      const next = await depose(pool, a, b, name, leaseA);

      const outcome = await runBatch(pool, p, "interval", { lease: leaseA }).then(
        () => "committed",
        (e: unknown) => e,
      );
      expect(outcome).toBeInstanceOf(LeaseLostError);
      expect((outcome as LeaseLostError).message).toMatch(
        new RegExp(
          `^pipeline ${name}: the lease of epoch ${leaseA.epoch} is no longer held \\(epoch ${next.epoch}, taken by [AB]\\)`,
        ),
      );
      expect(await statuses()).toEqual(["big1 accepted", "big2 accepted", "ok accepted"]);
      expect(await failures()).toEqual([]);
      expect(await checkpoint(pool, name)).toBeUndefined();
      expect(rolledBackLines(a, leaseA, next)).toBe(1);

      const progress = await runBatch(pool, p, "interval", { lease: next });
      expect([progress?.batchId, progress?.numInputRows, progress?.numQuarantinedRows]).toEqual([0, 1, 2]);
      expect(await statuses()).toEqual(["big1 quarantined", "big2 quarantined", "ok accepted"]);
      expect(await failures()).toEqual([{ group_key: "k0", phase: "stream", batch_id: 0, quarantined_rows: 2 }]);
      expect(await resultTotals(pool, name)).toEqual({ events: 1, sum: 5 });
    },
  );
});
