/**
 * The windows reconcile runs found differing from bronze (`straggler.reconcile_mismatches`,
 * migration 0033; docs/continuous-reconcile.md): recorded by the run, picked up as targets by
 * the next correction run, which names the reconcile run in its audit and marks them corrected.
 * Group keys are stored as everywhere else (`NULL_KEY` for the null group).
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { Aggregate } from "../readmodel/windows.js";

/** One mismatched window, its group key as stored. */
export interface MismatchRecord {
  groupKey: string;
  /** ISO 8601. */
  windowStart: string;
  windowEnd: string;
  stored: Aggregate | null;
  expected: Aggregate | null;
}

const RECORD_SQL = `INSERT INTO straggler.reconcile_mismatches (run_id, pipeline, group_key, window_start, window_end, stored, expected)
SELECT $1, $2, k, s, e, st, ex FROM unnest($3::text[], $4::timestamptz[], $5::timestamptz[], $6::jsonb[], $7::jsonb[]) AS m(k, s, e, st, ex)
ON CONFLICT DO NOTHING`;

/** Records the mismatches of reconcile run `runId`. */
export async function recordMismatches(
  client: Queryable,
  runId: number,
  pipeline: string,
  found: MismatchRecord[],
): Promise<void> {
  if (found.length === 0) return;
  await client.query(
    prepared("record_reconcile_mismatches", RECORD_SQL, [
      runId,
      pipeline,
      found.map((m) => m.groupKey),
      found.map((m) => m.windowStart),
      found.map((m) => m.windowEnd),
      found.map((m) => JSON.stringify(m.stored)),
      found.map((m) => JSON.stringify(m.expected)),
    ]),
  );
}

const OPEN_SQL = `SELECT pipeline, count(DISTINCT (group_key, window_start, window_end))::int AS n
  FROM straggler.reconcile_mismatches WHERE pipeline = ANY($1) AND corrected_by IS NULL GROUP BY pipeline`;

/** Per pipeline of `pipelines`, the windows found mismatched that no correction run has recomputed yet (0 when none). */
export async function countOpenMismatches(client: Queryable, pipelines: string[]): Promise<Map<string, number>> {
  const { rows } = await client.query<{ pipeline: string; n: number }>(
    prepared("count_open_mismatches", OPEN_SQL, [pipelines]),
  );
  const counts = new Map(pipelines.map((p) => [p, 0]));
  for (const r of rows) counts.set(r.pipeline, r.n);
  return counts;
}

const ADD_TARGETS_SQL = `INSERT INTO corr_targets
SELECT DISTINCT group_key, window_start, window_end FROM straggler.reconcile_mismatches
 WHERE pipeline = $1 AND corrected_by IS NULL AND window_end <= $2
   AND ($3::timestamptz IS NULL OR (window_start < $4 AND window_end > $3))
   AND ($5::text[] IS NULL OR group_key = ANY($5))
ON CONFLICT DO NOTHING`;

/** What a correction run picks: windows ending at or before `watermark`, optionally in `range` and of `keys` (stored form). */
export interface MismatchTargetRequest {
  watermark: string;
  range: { from: string; to: string } | null;
  keys: string[] | null;
}

/**
 * Adds the open mismatches of `pipeline` to the correction run's `corr_targets` (src/db/sql/lifecycle/createRunTables.ts).
 * @returns how many windows were added that were not targets already
 */
export async function addMismatchTargets(
  client: Queryable,
  pipeline: string,
  req: MismatchTargetRequest,
): Promise<number> {
  const { rowCount } = await client.query(
    prepared("add_reconcile_targets", ADD_TARGETS_SQL, [
      pipeline,
      req.watermark,
      req.range?.from ?? null,
      req.range?.to ?? null,
      req.keys,
    ]),
  );
  return rowCount ?? 0;
}

const NAME_CAUSE_SQL = `UPDATE straggler.corrections c SET reconcile_run_id = m.run_id
  FROM (SELECT group_key, window_start, window_end, max(run_id) AS run_id FROM straggler.reconcile_mismatches
         WHERE pipeline = $1 AND corrected_by IS NULL GROUP BY 1, 2, 3) m
 WHERE c.run_id = $2 AND c.group_key = m.group_key AND c.window_start = m.window_start AND c.window_end = m.window_end
RETURNING c.group_key, c.window_start, c.window_end, c.reconcile_run_id::int`;

const MARK_CORRECTED_SQL = `UPDATE straggler.reconcile_mismatches m SET corrected_by = $2 FROM corr_targets t
 WHERE m.pipeline = $1 AND m.corrected_by IS NULL
   AND m.group_key = t.group_key AND m.window_start = t.window_start AND m.window_end = t.window_end`;

/** A window a correction run changed because a reconcile run found it mismatched. */
export interface ReconcileCause {
  groupKey: string;
  windowStart: string;
  windowEnd: string;
  reconcileRunId: number;
}

/**
 * After correction run `correctionRunId` wrote its audit: names the reconcile run in the audit rows
 * of the windows it found mismatched, and marks every open mismatch among the run's targets corrected
 * (recomputed: changed, or found equal to bronze by then).
 * @returns the audit rows that name a reconcile run
 */
export async function settleMismatches(
  client: Queryable,
  pipeline: string,
  correctionRunId: number,
): Promise<ReconcileCause[]> {
  const { rows } = await client.query(prepared("name_reconcile_cause", NAME_CAUSE_SQL, [pipeline, correctionRunId]));
  await client.query(prepared("mark_reconcile_corrected", MARK_CORRECTED_SQL, [pipeline, correctionRunId]));
  return rows.map((r: { group_key: string; window_start: string; window_end: string; reconcile_run_id: number }) => ({
    groupKey: r.group_key,
    windowStart: r.window_start,
    windowEnd: r.window_end,
    reconcileRunId: r.reconcile_run_id,
  }));
}
