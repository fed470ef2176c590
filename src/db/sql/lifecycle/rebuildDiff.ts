/**
 * A rebuild's diff against the live version (`straggler.rebuild_window_changes`,
 * `straggler.rebuild_reason_changes`; views `straggler.rebuild_diff`,
 * `straggler.rebuild_reclassified`): windows added, removed or changed
 * (before → after), and rows whose classification changed, counted by
 * (before, after) reason. A row's label is `accepted`, its quarantine reason,
 * or `SUPERSEDED` for an accepted row a later version of its event superseded.
 */
import type { Queryable } from "../../pool.js";
import { liveVersion } from "../fragments/liveVersion.js";

const WINDOW_DIFF_SQL = `INSERT INTO straggler.rebuild_window_changes
  (pipeline, version, against_version, change, group_key, window_start, window_end,
   before_count, before_sum, before_min, before_max, after_count, after_sum, after_min, after_max)
SELECT $1, $2, $3, CASE WHEN o.group_key IS NULL THEN 'added' WHEN n.group_key IS NULL THEN 'removed' ELSE 'changed' END,
       coalesce(n.group_key, o.group_key), coalesce(n.window_start, o.window_start), coalesce(n.window_end, o.window_end),
       o.event_count, o.value_sum, o.value_min, o.value_max, n.event_count, n.value_sum, n.value_min, n.value_max
  FROM (SELECT * FROM straggler.window_results_table WHERE pipeline = $1 AND version = ${liveVersion()} AND event_count > 0) o
  FULL JOIN (SELECT * FROM straggler.window_results_table WHERE pipeline = $1 AND version = $2) n
    ON n.group_key = o.group_key AND n.window_start = o.window_start AND n.window_end = o.window_end
 WHERE o.group_key IS NULL OR n.group_key IS NULL
    OR (o.event_count, o.value_sum, o.value_min, o.value_max) IS DISTINCT FROM (n.event_count, n.value_sum, n.value_min, n.value_max)`;

/** Live (bronze) and version $2 labels of the rows up to seq $3, side by side. */
const LABELS = `SELECT b.seq, b.event_id,
       CASE WHEN b.status <> 'accepted' THEN b.reason
            WHEN EXISTS (SELECT 1 FROM straggler.superseded_events s WHERE s.seq = b.seq) THEN 'SUPERSEDED' ELSE 'accepted' END AS before,
       CASE WHEN c.status <> 'accepted' THEN c.reason
            WHEN EXISTS (SELECT 1 FROM straggler.superseded_versions s WHERE s.pipeline = $1 AND s.version = $2 AND s.seq = c.seq) THEN 'SUPERSEDED' ELSE 'accepted' END AS after
  FROM straggler.bronze_events b
  JOIN straggler.event_classifications c ON c.pipeline = $1 AND c.version = $2 AND c.seq = b.seq
 WHERE b.pipeline = $1 AND b.seq <= $3`;

/** A row whose classification changed: its seq, event id, and label before (live) and after (the version). */
export interface ChangedRow {
  seq: number;
  eventId: string;
  before: string;
  after: string;
}

/**
 * Writes the diff of `version` against the live results and classification of `pipeline` (replacing any earlier diff of it).
 * @param against the live version's number (null when none is recorded)
 * @returns the first 100 rows whose classification changed, by seq
 */
export async function writeRebuildDiff(
  client: Queryable,
  pipeline: string,
  version: number,
  against: number | null,
  ledgerSeq: number,
): Promise<ChangedRow[]> {
  await client.query("DELETE FROM straggler.rebuild_window_changes WHERE pipeline = $1 AND version = $2", [
    pipeline,
    version,
  ]);
  await client.query("DELETE FROM straggler.rebuild_reason_changes WHERE pipeline = $1 AND version = $2", [
    pipeline,
    version,
  ]);
  await client.query(WINDOW_DIFF_SQL, [pipeline, version, against]);
  await client.query(
    `INSERT INTO straggler.rebuild_reason_changes (pipeline, version, before_reason, after_reason, rows)
     SELECT $1, $2, before, after, count(*) FROM (${LABELS}) x WHERE before IS DISTINCT FROM after GROUP BY before, after`,
    [pipeline, version, ledgerSeq],
  );
  const { rows } = await client.query(
    `SELECT * FROM (${LABELS}) x WHERE before IS DISTINCT FROM after ORDER BY seq LIMIT 100`,
    [pipeline, version, ledgerSeq],
  );
  return rows.map((r) => ({ seq: Number(r.seq), eventId: r.event_id, before: r.before, after: r.after }));
}

/** One window of the diff. Instants ISO 8601; sums as numeric strings; `groupKey` decoded (null: the null group). */
export interface WindowChange {
  change: "added" | "removed" | "changed";
  groupKey: string | null;
  windowStart: string;
  windowEnd: string;
  before: { count: number; sum: string | null; min: string | null; max: string | null } | null;
  after: { count: number; sum: string | null; min: string | null; max: string | null } | null;
}

/** The diff of `version`: its windows (by start, key) and its reclassified rows by reason (most first). */
export async function readRebuildDiff(
  client: Queryable,
  pipeline: string,
  version: number,
): Promise<{ windows: WindowChange[]; reclassified: { before: string; after: string; rows: number }[] }> {
  const w = await client.query(
    `SELECT change, group_key, window_start, window_end, before_count, before_sum, before_min, before_max, after_count, after_sum, after_min, after_max
       FROM straggler.rebuild_diff WHERE pipeline = $1 AND version = $2 ORDER BY window_start, group_key`,
    [pipeline, version],
  );
  const r = await client.query(
    "SELECT before_reason, after_reason, rows FROM straggler.rebuild_reclassified WHERE pipeline = $1 AND version = $2 ORDER BY rows DESC, before_reason, after_reason",
    [pipeline, version],
  );
  const agg = (n: number | null, s: string | null, lo: string | null, hi: string | null) =>
    n === null ? null : { count: Number(n), sum: s, min: lo, max: hi };
  return {
    windows: w.rows.map((x) => ({
      change: x.change,
      groupKey: x.group_key,
      windowStart: x.window_start,
      windowEnd: x.window_end,
      before: agg(x.before_count, x.before_sum, x.before_min, x.before_max),
      after: agg(x.after_count, x.after_sum, x.after_min, x.after_max),
    })),
    reclassified: r.rows.map((x) => ({ before: x.before_reason, after: x.after_reason, rows: Number(x.rows) })),
  };
}
