/**
 * Rebuild runs and candidate versions (`straggler.rebuilds`,
 * `straggler.policy_versions`; src/lifecycle/rebuild.ts): a candidate is
 * created with its run, progresses page by page, and is marked complete only
 * at the end, with its reconcile.
 */
import { LockNamespace } from "../../locks.js";
import type { PoolClient, Queryable } from "../../pool.js";

/** A rebuild as recorded. Instants ISO 8601; seqs are bronze seqs. */
export interface RebuildRun {
  pipeline: string;
  version: number;
  policyVersion: string;
  state: "live" | "candidate" | "retired";
  status: "running" | "complete";
  /** The ledger's highest seq of the pipeline when the rebuild started (or last caught up). */
  ledgerSeq: number;
  /** Rows up to this seq are classified. */
  doneSeq: number;
  rowsDone: number;
  reconcileOk: boolean | null;
  reconcile: Record<string, unknown> | null;
  startedAt: string;
  finishedAt: string | null;
}

const RUN_SQL = `SELECT r.pipeline, r.version, v.policy_version, v.state, r.status, r.ledger_seq, r.done_seq, r.rows_done, r.reconcile_ok, r.reconcile, r.started_at, r.finished_at
  FROM straggler.rebuilds r JOIN straggler.policy_versions v USING (pipeline, version)`;

function toRun(r: any): RebuildRun {
  return {
    pipeline: r.pipeline,
    version: r.version,
    policyVersion: r.policy_version,
    state: r.state,
    status: r.status,
    ledgerSeq: Number(r.ledger_seq),
    doneSeq: Number(r.done_seq),
    rowsDone: Number(r.rows_done),
    reconcileOk: r.reconcile_ok,
    reconcile: r.reconcile,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  };
}

/** The rebuild of `pipeline` still running (a killed one), if any. */
export async function readRunningRebuild(client: Queryable, pipeline: string): Promise<RebuildRun | undefined> {
  const r = (
    await client.query(`${RUN_SQL} WHERE r.pipeline = $1 AND r.status = 'running' ORDER BY r.version DESC LIMIT 1`, [
      pipeline,
    ])
  ).rows[0];
  return r && toRun(r);
}

/** The rebuild that made `version` of `pipeline`, if one did. */
export async function readRebuild(
  client: Queryable,
  pipeline: string,
  version: number,
): Promise<RebuildRun | undefined> {
  const r = (await client.query(`${RUN_SQL} WHERE r.pipeline = $1 AND r.version = $2`, [pipeline, version])).rows[0];
  return r && toRun(r);
}

/** The highest bronze seq of `pipeline` (0 when it has none). */
export async function readPipelineMaxSeq(client: Queryable, pipeline: string): Promise<number> {
  return Number(
    (
      await client.query("SELECT coalesce(max(seq), 0) AS s FROM straggler.bronze_events WHERE pipeline = $1", [
        pipeline,
      ])
    ).rows[0].s,
  );
}

/**
 * Creates a candidate version with `policy` and its running rebuild over the ledger up to `ledgerSeq`.
 * @returns the new version number
 */
export async function createCandidate(
  client: Queryable,
  pipeline: string,
  policyVersion: string,
  policy: string,
  ledgerSeq: number,
): Promise<number> {
  const version: number = (
    await client.query(
      `INSERT INTO straggler.policy_versions (pipeline, version, state, policy_version, policy)
       SELECT $1, coalesce(max(version), 0) + 1, 'candidate', $2, $3 FROM straggler.policy_versions WHERE pipeline = $1
       RETURNING version`,
      [pipeline, policyVersion, policy],
    )
  ).rows[0].version;
  await client.query(
    "INSERT INTO straggler.rebuilds (pipeline, version, status, ledger_seq) VALUES ($1, $2, 'running', $3)",
    [pipeline, version, ledgerSeq],
  );
  return version;
}

/** Records that rows up to `doneSeq` are classified (`rows` more of them), in the page's transaction. */
export async function saveRebuildProgress(
  client: Queryable,
  pipeline: string,
  version: number,
  doneSeq: number,
  rows: number,
): Promise<void> {
  await client.query(
    "UPDATE straggler.rebuilds SET done_seq = $3, rows_done = rows_done + $4, updated_at = now() WHERE pipeline = $1 AND version = $2",
    [pipeline, version, doneSeq, rows],
  );
}

/** Marks the rebuild of `version` complete with its reconcile and the rows whose classification changed. */
export async function completeRebuild(
  client: Queryable,
  pipeline: string,
  version: number,
  ledgerSeq: number,
  reconcile: { ok: boolean } & Record<string, unknown>,
  changedRows: unknown[],
): Promise<void> {
  await client.query(
    `UPDATE straggler.rebuilds SET status = 'complete', ledger_seq = $3, done_seq = $3, reconcile_ok = $4, reconcile = $5, changed_rows = $6, finished_at = now(), updated_at = now()
      WHERE pipeline = $1 AND version = $2`,
    [pipeline, version, ledgerSeq, reconcile.ok, JSON.stringify(reconcile), JSON.stringify(changedRows)],
  );
}

/**
 * True when a version of `pipeline` went live after `since` (ISO instant, a rebuild's start): bronze's
 * classification may have changed under the rows the rebuild marked against it (drizzle/0037).
 */
export async function wentLiveSince(client: Queryable, pipeline: string, since: string): Promise<boolean> {
  return (
    await client.query(
      "SELECT coalesce(max(live_since) > $2::timestamptz, false) AS changed FROM straggler.policy_versions WHERE pipeline = $1",
      [pipeline, since],
    )
  ).rows[0].changed;
}

/** Every table holding one version's rows beside the live ones (all keyed by pipeline, version; the windows of every version are in one table, drizzle/0051). */
const VERSION_TABLES = [
  "event_classifications",
  "superseded_versions",
  "window_results_table",
  "version_checkpoints",
  "version_late_windows",
  "rebuild_window_changes",
  "rebuild_reason_changes",
  "rebuilds",
  "version_lateness_histogram",
  "version_lateness_windows",
  "version_lateness_coverage",
];

/** Removes every row of `version` of `pipeline`, and the version itself; the live version's rows are never removed (each statement checks). */
export async function deleteVersion(client: Queryable, pipeline: string, version: number): Promise<void> {
  for (const t of VERSION_TABLES)
    await client.query(
      `DELETE FROM straggler.${t} WHERE pipeline = $1 AND version = $2
          AND NOT EXISTS (SELECT 1 FROM straggler.policy_versions v WHERE v.pipeline = $1 AND v.version = $2 AND v.state = 'live')`,
      [pipeline, version],
    );
  await client.query("DELETE FROM straggler.policy_versions WHERE pipeline = $1 AND version = $2 AND state <> 'live'", [
    pipeline,
    version,
  ]);
}

/**
 * Tries the rebuild lock of `pipeline` on `client`'s session (held until released or the session ends:
 * a killed rebuild's lock goes with its connection).
 * @returns false when another session holds it
 */
export async function tryRebuildLock(client: PoolClient, pipeline: string): Promise<boolean> {
  return (
    await client.query("SELECT pg_try_advisory_lock($1::int, hashtext($2)) AS ok", [LockNamespace.rebuild, pipeline])
  ).rows[0].ok;
}

/** Releases the rebuild lock taken by `tryRebuildLock` on `client`. */
export async function releaseRebuildLock(client: PoolClient, pipeline: string): Promise<void> {
  await client.query("SELECT pg_advisory_unlock($1::int, hashtext($2))", [LockNamespace.rebuild, pipeline]);
}

/** A version's own checkpoint (`straggler.version_checkpoints`). Instants ISO 8601. */
export interface VersionCheckpoint {
  batchId: number;
  lastSeq: number;
  maxEventTime: string | null;
  watermark: string | null;
  /**
   * Each input's event-time state as the stream keeps it (`straggler.checkpoints.inputs`); null: the
   * default input alone, with this checkpoint's max event time and watermark (what a rebuild writes).
   */
  inputs: unknown[] | null;
}

/** Writes `version`'s checkpoint. */
export async function saveVersionCheckpoint(
  client: Queryable,
  pipeline: string,
  version: number,
  c: VersionCheckpoint,
): Promise<void> {
  await client.query(
    `INSERT INTO straggler.version_checkpoints (pipeline, version, batch_id, last_offset, max_event_time, watermark, inputs) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (pipeline, version) DO UPDATE SET batch_id = $3, last_offset = $4, max_event_time = $5, watermark = $6, inputs = $7`,
    [
      pipeline,
      version,
      c.batchId,
      c.lastSeq,
      c.maxEventTime,
      c.watermark,
      c.inputs === null ? null : JSON.stringify(c.inputs),
    ],
  );
}

/** @returns `version`'s checkpoint, or undefined when none is stored */
export async function readVersionCheckpoint(
  client: Queryable,
  pipeline: string,
  version: number,
): Promise<VersionCheckpoint | undefined> {
  const r = (
    await client.query(
      "SELECT batch_id, last_offset, max_event_time, watermark, inputs FROM straggler.version_checkpoints WHERE pipeline = $1 AND version = $2",
      [pipeline, version],
    )
  ).rows[0];
  return (
    r && {
      batchId: Number(r.batch_id),
      lastSeq: Number(r.last_offset),
      maxEventTime: r.max_event_time,
      watermark: r.watermark,
      inputs: r.inputs,
    }
  );
}
