/**
 * Reconcile runs (`straggler.reconcile_runs`, migration 0033; docs/continuous-reconcile.md):
 * claim a run, record its outcome, read the last ones and the cursor the next one starts at.
 * Instants are ISO 8601 UTC strings.
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { liveVersion } from "../fragments/liveVersion.js";

export type ReconcileTrigger = "cron" | "api" | "cli";

/** What a run is asked to check: `range` null = all time. */
export interface ReconcileClaim {
  pipeline: string;
  trigger: ReconcileTrigger;
  /** The scheduled minute of a cron run (ISO); null otherwise. */
  cronSlot: string | null;
  /** `all` or a percentage such as `5%`. */
  sample: string;
}

/** What a finished run found; `range` null = all time. */
export interface ReconcileOutcome {
  status: "succeeded" | "failed";
  range: { from: string; to: string } | null;
  bronzeSnapshot: number | null;
  watermark: string | null;
  windowsChecked: number | null;
  windowsMismatched: number | null;
  windowsFailed: number | null;
  ledgerBalanced: boolean | null;
  error: string | null;
}

/** A row of `straggler.reconcile_runs` as the API shows it: the claim, then the outcome's figures (null while running). */
export interface ReconcileRunRow extends Omit<ReconcileOutcome, "status" | "range"> {
  runId: number;
  pipeline: string;
  trigger: ReconcileTrigger;
  cronSlot: string | null;
  sample: string;
  rangeStart: string | null;
  rangeEnd: string | null;
  status: "running" | "succeeded" | "failed";
  startedAt: string;
  finishedAt: string | null;
}

const CLAIM_SQL = `INSERT INTO straggler.reconcile_runs (pipeline, trigger, cron_slot, sample, status)
VALUES ($1, $2, $3, $4, 'running') ON CONFLICT DO NOTHING RETURNING run_id::int`;

/** @returns the new run's id, or null when a run of the same cron slot exists (another replica's) */
export async function claimReconcileRun(client: Queryable, c: ReconcileClaim): Promise<number | null> {
  const { rows } = await client.query<{ run_id: number }>(
    prepared("claim_reconcile_run", CLAIM_SQL, [c.pipeline, c.trigger, c.cronSlot, c.sample]),
  );
  return rows[0]?.run_id ?? null;
}

const FINISH_SQL = `UPDATE straggler.reconcile_runs SET status = $2, range_start = $3, range_end = $4, bronze_snapshot = $5,
  watermark = $6, windows_checked = $7, windows_mismatched = $8, windows_failed = $9, ledger_balanced = $10, error = $11,
  finished_at = now()
 WHERE run_id = $1`;

/** Records the outcome of run `runId`. */
export async function finishReconcileRun(client: Queryable, runId: number, o: ReconcileOutcome): Promise<void> {
  await client.query(
    prepared("finish_reconcile_run", FINISH_SQL, [
      runId,
      o.status,
      o.range?.from ?? null,
      o.range?.to ?? null,
      o.bronzeSnapshot,
      o.watermark,
      o.windowsChecked,
      o.windowsMismatched,
      o.windowsFailed,
      o.ledgerBalanced,
      o.error,
    ]),
  );
}

const COLUMNS = `run_id::int AS "runId", pipeline, trigger, cron_slot AS "cronSlot", sample, range_start AS "rangeStart",
  range_end AS "rangeEnd", status, bronze_snapshot::int AS "bronzeSnapshot", watermark, windows_checked AS "windowsChecked",
  windows_mismatched AS "windowsMismatched", windows_failed AS "windowsFailed", ledger_balanced AS "ledgerBalanced", error,
  started_at AS "startedAt", finished_at AS "finishedAt"`;

const LAST_RUNS_SQL = `SELECT DISTINCT ON (pipeline) ${COLUMNS} FROM straggler.reconcile_runs
 WHERE pipeline = ANY($1) AND status <> 'running' ORDER BY pipeline, run_id DESC`;

/** The latest finished run of each of `pipelines` that has one, by pipeline. */
export async function readLastReconcileRuns(
  client: Queryable,
  pipelines: string[],
): Promise<Map<string, ReconcileRunRow>> {
  const { rows } = await client.query<ReconcileRunRow>(
    prepared("read_last_reconcile_runs", LAST_RUNS_SQL, [pipelines]),
  );
  return new Map(rows.map((r) => [r.pipeline, r]));
}

const CURSOR_SQL = `SELECT range_end FROM straggler.reconcile_runs
 WHERE pipeline = $1 AND status = 'succeeded' AND sample = $2 ORDER BY run_id DESC LIMIT 1`;

/** Where the last succeeded run with `sample` stopped (its range's end), or null. */
export async function readReconcileCursor(client: Queryable, pipeline: string, sample: string): Promise<string | null> {
  const { rows } = await client.query<{ range_end: string | null }>(
    prepared("read_reconcile_cursor", CURSOR_SQL, [pipeline, sample]),
  );
  return rows[0]?.range_end ?? null;
}

const EARLIEST_SQL = `SELECT least(
  (SELECT min(event_time) FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'accepted'),
  (SELECT min(window_start) FROM straggler.window_results_table WHERE pipeline = $1 AND version = ${liveVersion()})) AS earliest`;

/** The earliest instant a final window of `pipeline` can overlap: its first accepted event time or stored window start. */
export async function readEarliestInstant(client: Queryable, pipeline: string): Promise<string | null> {
  const { rows } = await client.query<{ earliest: string | null }>(
    prepared("read_reconcile_earliest", EARLIEST_SQL, [pipeline]),
  );
  return rows[0]?.earliest ?? null;
}
