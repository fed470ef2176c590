/**
 * The audit of a correction run (`straggler.corrections`): one row per
 * changed window with its value before and after and the late events that
 * caused the change (DESIGN §9).
 */
import { keyIn, keyOut } from "../../../core/keys.js";
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { Aggregate } from "../readmodel/windows.js";

/** One window a correction changed. */
export interface WindowChange {
  /** null for the null group. */
  groupKey: string | null;
  /** ISO 8601. */
  windowStart: string;
  windowEnd: string;
  /** null: the results had no such window. */
  before: Aggregate | null;
  after: Aggregate;
  revision: number;
  lateEventCount: number;
  /** At most MAX_IDS_PER_WINDOW, in bronze `seq` order. */
  lateEventIds: string[];
  /** The reconcile run that found this window differing from bronze, when that caused the change (docs/continuous-reconcile.md). */
  reconcileRunId?: number;
}

/** At most this many late event ids are kept per audit row (the count is always exact). */
const MAX_IDS_PER_WINDOW = 1000;

/**
 * The late events of a window, from its `straggler.late_events` rows aliased `alias` (`GROUP BY` none): their count
 * `n` and their event ids `ids` in bronze `seq` order, at most MAX_IDS_PER_WINDOW. Each row holds its event's id
 * (drizzle/0049_late_event_ids.sql), so bronze is not read for it; a row recorded before whose bronze row was gone
 * when that migration ran has none and is not counted (as the join with bronze that named them did not count it).
 */
export function lateEventsOf(alias: string): string {
  const id = `${alias}.event_id`;
  return `count(${id})::int AS n, (array_agg(${id} ORDER BY ${alias}.seq) FILTER (WHERE ${id} IS NOT NULL))[1:${MAX_IDS_PER_WINDOW}] AS ids`;
}

const WRITE_AUDIT_SQL = `INSERT INTO straggler.corrections (run_id, pipeline, group_key, window_start, window_end, revision_before, revision_after,
   count_before, sum_before, min_before, max_before, count_after, sum_after, min_after, max_after, late_event_count, late_event_ids)
SELECT $2, $1, ch.group_key, ch.window_start, ch.window_end, ch.rev_before, coalesce(ch.rev_before + 1, 1),
       ch.n_before, ch.s_before, ch.lo_before, ch.hi_before, ch.n, ch.s, ch.lo, ch.hi,
       coalesce(le.n, 0), coalesce(le.ids, '{}')
  FROM corr_changes ch
  LEFT JOIN LATERAL (
    SELECT ${lateEventsOf("l")}
      FROM straggler.late_events l
     WHERE l.pipeline = $1 AND l.group_key = ch.group_key AND l.window_start = ch.window_start
       AND l.window_end = ch.window_end AND l.seq <= $3) le ON true
RETURNING group_key, window_start, window_end, revision_after, count_before, sum_before, min_before, max_before,
          count_after, sum_after, min_after, max_after, late_event_count, late_event_ids`;

/**
 * Writes an audit row for every row of `corr_changes` of run `runId`, counting the late events up to bronze `seq` `snapshot`.
 * @returns the changes, ordered by group key, then window start
 */
export async function writeAudit(
  client: PoolClient,
  pipeline: string,
  runId: number,
  snapshot: number,
): Promise<WindowChange[]> {
  const { rows } = await client.query(prepared("write_audit", WRITE_AUDIT_SQL, [pipeline, runId, snapshot]));
  return changesOf(rows);
}

/** `String.prototype.localeCompare`'s order (the default locale), one collator for every comparison. */
const COLLATOR = new Intl.Collator();

/**
 * The changes of audit rows (`straggler.corrections` columns as RETURNING gives them).
 * @returns the changes, ordered by group key, then window start, then window end
 */
export function changesOf(rows: Record<string, any>[]): WindowChange[] {
  // Each change's sort key built once (not twice per comparison), compared as `localeCompare` compares.
  const keyed = rows.map((r) => {
    const change: WindowChange = {
      groupKey: keyOut(r.group_key),
      windowStart: r.window_start,
      windowEnd: r.window_end,
      before:
        r.count_before === null
          ? null
          : { count: r.count_before, sum: r.sum_before, min: r.min_before, max: r.max_before },
      after: { count: r.count_after, sum: r.sum_after, min: r.min_after, max: r.max_after },
      revision: r.revision_after,
      lateEventCount: r.late_event_count,
      lateEventIds: r.late_event_ids,
    };
    return { key: keyIn(change.groupKey) + change.windowStart + change.windowEnd, change };
  });
  return keyed.sort((a, b) => COLLATOR.compare(a.key, b.key)).map((k) => k.change);
}
