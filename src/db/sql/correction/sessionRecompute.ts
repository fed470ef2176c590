/**
 * A session correction's recompute and replacement (docs/DESIGN.md "Session
 * windows", src/correction/sessions.ts), over the spans of `sess_spans`
 * (sessionSpans.ts), in the run's transaction:
 *
 * - `recomputeSessions`: the batch sessionization of the accepted bronze rows
 *   up to the snapshot inside each span (`sess_new`), and the stored sessions
 *   inside the spans (`sess_old`).
 * - `replaceSessions`: the audit first (`straggler.corrections`: every new
 *   session that is not stored as it is, before = the stored row with its
 *   bounds or none, after = its aggregates; every stored session no new one
 *   has the bounds of, after = count 0), then the stored sessions that are
 *   gone are removed into `straggler.session_retractions` (reason
 *   `corrected`, the run, the new session that took their events), then the
 *   new ones are upserted: final when they end at or before the watermark, a
 *   revision above every row they replace. Late marks inside the spans are
 *   cleared up to the snapshot.
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { CHANGE_COLUMNS, changeRow } from "../fragments/changeRows.js";
import { notSuperseded } from "../fragments/superseded.js";
import { timestamptzToUs, usToTimestamptz } from "../fragments/windowAssignment.js";
import { changesOf, lateEventsOf, type WindowChange } from "./writeAudit.js";
import { liveVersion } from "../fragments/liveVersion.js";

/* Keyed by (key, start): the audit and the retractions look sessions up by bounds and by overlap. */
const CREATE_NEW_SQL = `CREATE TEMP TABLE IF NOT EXISTS sess_new (group_key text, ws timestamptz, we timestamptz,
  n bigint, s numeric, lo numeric, hi numeric, PRIMARY KEY (group_key, ws)) ON COMMIT DELETE ROWS`;
const CREATE_OLD_SQL = `CREATE TEMP TABLE IF NOT EXISTS sess_old (group_key text, ws timestamptz, we timestamptz,
  n bigint, s numeric, lo numeric, hi numeric, revision int, PRIMARY KEY (group_key, ws)) ON COMMIT DELETE ROWS`;

/* $1 pipeline, $2 snapshot, $3 gap µs. An event is in a span when its own window lies inside it (an index range per span). */
const NEW_SQL = `INSERT INTO sess_new
WITH ev AS (
  SELECT p.group_key, b.t_us, b.value
    FROM sess_spans p
   CROSS JOIN LATERAL (
     SELECT ${timestamptzToUs("b.event_time")} AS t_us, b.value FROM straggler.bronze_events b
      WHERE b.pipeline || '' = $1 AND b.group_key = p.group_key AND b.event_time >= p.ws AND b.event_time <= p.we - $3::bigint * interval '1 microsecond'
        AND b.status = 'accepted' AND b.seq + 0 <= $2 AND ${notSuperseded("b", "$2")} OFFSET 0) b
), marked AS (
  SELECT *, CASE WHEN t_us <= max(t_us) OVER (PARTITION BY group_key ORDER BY t_us ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) + $3::bigint
                 THEN 0 ELSE 1 END AS starts FROM ev
), numbered AS (
  SELECT *, sum(starts) OVER (PARTITION BY group_key ORDER BY t_us ROWS UNBOUNDED PRECEDING) AS island FROM marked
)
SELECT group_key, ${usToTimestamptz("min(t_us)")}, ${usToTimestamptz("max(t_us) + $3::bigint")}, count(*), sum(value), min(value), max(value)
  FROM numbered GROUP BY group_key, island`;

/* Stored sessions inside a span: an index range on window start per span. */
const OLD_SQL = `INSERT INTO sess_old
SELECT r.group_key, r.window_start, r.window_end, r.event_count, r.value_sum, r.value_min, r.value_max, r.revision
  FROM sess_spans p
 CROSS JOIN LATERAL (SELECT * FROM straggler.window_results_table r
                      WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND r.group_key = p.group_key AND r.window_start >= p.ws AND r.window_start <= p.we OFFSET 0) r
 WHERE r.window_end <= p.we`;

/*
 * $1 pipeline, $2 run, $3 snapshot, $4 gap µs. New sessions not stored as they are, then stored
 * sessions whose bounds no new one has. A new session's revision is one above the rows it
 * overlaps: those starting inside it, and the last one starting before it when it reaches in
 * (stored sessions never overlap, so no earlier one can).
 */
const AUDIT_SQL = `WITH changed AS (
  SELECT n.*, o.revision AS rev_before, o.n AS n_before, o.s AS s_before, o.lo AS lo_before, o.hi AS hi_before,
         coalesce(greatest(
           (SELECT max(x.revision) FROM sess_old x WHERE x.group_key = n.group_key AND x.ws >= n.ws AND x.ws < n.we),
           (SELECT CASE WHEN y.we > n.ws THEN y.revision END
              FROM (SELECT x.ws, x.we, x.revision FROM sess_old x WHERE x.group_key = n.group_key AND x.ws < n.ws ORDER BY x.ws DESC LIMIT 1) y)
         ), 0) + 1 AS rev_after
    FROM sess_new n LEFT JOIN sess_old o ON o.group_key = n.group_key AND o.ws = n.ws AND o.we = n.we
   WHERE o.group_key IS NULL OR (o.n, o.s, o.lo, o.hi) IS DISTINCT FROM (n.n, n.s, n.lo, n.hi)
), gone AS (
  SELECT o.* FROM sess_old o WHERE NOT EXISTS (SELECT 1 FROM sess_new n WHERE n.group_key = o.group_key AND n.ws = o.ws AND n.we = o.we)
)
INSERT INTO straggler.corrections (run_id, pipeline, group_key, window_start, window_end, revision_before, revision_after,
   count_before, sum_before, min_before, max_before, count_after, sum_after, min_after, max_after, late_event_count, late_event_ids)
SELECT $2::bigint, $1::text, c.group_key, c.ws, c.we, c.rev_before, c.rev_after, c.n_before, c.s_before, c.lo_before, c.hi_before, c.n, c.s, c.lo, c.hi,
       coalesce(le.n, 0), coalesce(le.ids, '{}')
  FROM changed c
  LEFT JOIN LATERAL (
    SELECT ${lateEventsOf("l")}
      FROM straggler.late_events l
     WHERE l.pipeline = $1 AND l.group_key = c.group_key AND l.seq <= $3
       AND l.window_start >= c.ws AND l.window_start <= c.we - $4::bigint * interval '1 microsecond') le ON true
UNION ALL
SELECT $2::bigint, $1::text, g.group_key, g.ws, g.we, g.revision, g.revision + 1, g.n, g.s, g.lo, g.hi, 0, NULL, NULL, NULL, 0, '{}'::text[]
  FROM gone g
RETURNING group_key, window_start, window_end, revision_after, count_before, sum_before, min_before, max_before,
          count_after, sum_after, min_after, max_after, late_event_count, late_event_ids`;

/* $1 pipeline, $2 run. */
const RETRACT_SQL = `WITH gone AS (
  DELETE FROM straggler.window_results_table r USING sess_old o
   WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND r.group_key = o.group_key AND r.window_start = o.ws AND r.window_end = o.we
     AND NOT EXISTS (SELECT 1 FROM sess_new n WHERE n.group_key = o.group_key AND n.ws = o.ws AND n.we = o.we)
  RETURNING r.*
)
INSERT INTO straggler.session_retractions (pipeline, group_key, window_start, window_end, event_count, value_sum, value_min, value_max,
  revision, was_final, reason, run_id, replaced_by_start, replaced_by_end)
SELECT g.pipeline, g.group_key, g.window_start, g.window_end, g.event_count, g.value_sum, g.value_min, g.value_max, g.revision, g.is_final,
       'corrected', $2, n.ws, n.we
  FROM gone g
  LEFT JOIN LATERAL (SELECT ws, we FROM sess_new n WHERE n.group_key = g.group_key AND n.ws < g.window_end AND n.we > g.window_start
                      ORDER BY n.ws LIMIT 1) n ON true
 ORDER BY g.group_key, g.window_start`;

/*
 * $1 pipeline, $2 watermark, $3 run: the audit rows of this run that have events are the sessions to write.
 * With the change feed (`feed`), the run's audit rows are its changes in the feed (src/db/sql/fragments/changeRows.ts): a session with
 * events is corrected, a stored one gone (after count 0) retracted; retractions first.
 */
const upsertSql = (feed: boolean) => `${
  feed
    ? `WITH feed AS (
  INSERT INTO straggler.window_changes (${CHANGE_COLUMNS}, run_id)
  SELECT ${changeRow({
    pipeline: "$1",
    change: "CASE WHEN c.count_after > 0 THEN 'corrected' ELSE 'retracted' END",
    key: "c.group_key",
    start: "c.window_start",
    end: "c.window_end",
    revision: "c.revision_after",
    before: ["c.count_before", "c.sum_before", "c.min_before", "c.max_before"],
    after: ["CASE WHEN c.count_after > 0 THEN c.count_after END", "c.sum_after", "c.min_after", "c.max_after"],
  })}, $3
    FROM straggler.corrections c WHERE c.run_id = $3 ORDER BY c.count_after > 0, c.group_key, c.window_start
)
`
    : ""
}INSERT INTO straggler.window_results_table AS t
  (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, is_final, corrected, revision)
SELECT $1, ${liveVersion()}, c.group_key, c.window_start, c.window_end, c.count_after, c.sum_after, c.min_after, c.max_after,
       c.window_end <= $2, c.window_end <= $2, c.revision_after
  FROM straggler.corrections c WHERE c.run_id = $3 AND c.count_after > 0
ON CONFLICT (pipeline, version, group_key, window_start, window_end) DO UPDATE
  SET event_count = excluded.event_count, value_sum = excluded.value_sum, value_min = excluded.value_min, value_max = excluded.value_max,
      is_final = excluded.is_final, corrected = excluded.corrected, revision = excluded.revision, updated_at = now()`;

/*
 * Late marks inside a span, up to the snapshot: an index range per span on their keys (pipeline,
 * group key, window start, …). Every LATERAL subquery here ends in `OFFSET 0` so that it stays a
 * per-span index range (see sessionSpans.ts).
 */
const CLEAR_LATE_EVENTS_SQL = `DELETE FROM straggler.late_events WHERE ctid IN (
  SELECT l.ctid FROM sess_spans p
   CROSS JOIN LATERAL (SELECT x.ctid, x.window_end, x.seq FROM straggler.late_events x
                        WHERE x.pipeline = $1 AND x.group_key = p.group_key AND x.window_start >= p.ws AND x.window_start <= p.we OFFSET 0) l
   WHERE l.window_end <= p.we AND l.seq <= $2)`;
const CLEAR_LATE_WINDOWS_SQL = `DELETE FROM straggler.late_windows WHERE ctid IN (
  SELECT l.ctid FROM sess_spans p
   CROSS JOIN LATERAL (SELECT x.ctid, x.window_end, x.max_seq FROM straggler.late_windows x
                        WHERE x.pipeline = $1 AND x.group_key = p.group_key AND x.window_start >= p.ws AND x.window_start <= p.we OFFSET 0) l
   WHERE l.window_end <= p.we AND l.max_seq <= $2)`;

/**
 * Fills `sess_new` and `sess_old` over `sess_spans`, reading bronze up to `seq` `snapshot`.
 * @throws the database's error (a data exception, SQLSTATE class 22, when a session's sum overflows numeric)
 */
export async function recomputeSessions(
  client: PoolClient,
  pipeline: string,
  snapshot: number,
  gapMs: number,
): Promise<void> {
  await client.query(CREATE_NEW_SQL);
  await client.query(CREATE_OLD_SQL);
  const gap = (BigInt(gapMs) * 1000n).toString();
  await client.query(prepared("sess_new", NEW_SQL, [pipeline, snapshot, gap]));
  await client.query(prepared("sess_old", OLD_SQL, [pipeline]));
  // Fresh statistics for the temporary tables (autovacuum never sees them): the audit joins them.
  await client.query("ANALYZE sess_new, sess_old");
}

/**
 * Writes run `runId`'s audit, retracts the stored sessions that are gone, upserts the new ones
 * and clears the late marks inside the spans up to `snapshot`.
 * @param watermark the stream's watermark (ISO 8601): sessions ending at or before it are final
 * @param feed the pipeline keeps a change feed (`feed.enabled`): the upsert writes the run's changes
 * @returns the changes, ordered by group key, then window start
 */
export async function replaceSessions(
  client: PoolClient,
  pipeline: string,
  run: { runId: number; snapshot: number; watermark: string },
  gapMs: number,
  feed = false,
): Promise<WindowChange[]> {
  const gap = (BigInt(gapMs) * 1000n).toString();
  const { rows } = await client.query(prepared("sess_audit", AUDIT_SQL, [pipeline, run.runId, run.snapshot, gap]));
  await client.query(prepared("sess_retract", RETRACT_SQL, [pipeline, run.runId]));
  await client.query(
    prepared(feed ? "sess_upsert_feed" : "sess_upsert", upsertSql(feed), [pipeline, run.watermark, run.runId]),
  );
  await client.query(prepared("sess_clear_late_events", CLEAR_LATE_EVENTS_SQL, [pipeline, run.snapshot]));
  await client.query(prepared("sess_clear_late_windows", CLEAR_LATE_WINDOWS_SQL, [pipeline, run.snapshot]));
  return changesOf(rows);
}
