/**
 * A micro-batch's steps for session windows (docs/DESIGN.md "Session windows";
 * the pure rules are src/core/sessions.ts), run by src/stream/sessionBatch.ts
 * in the batch's transaction:
 *
 * 1. `stageSessionEvents`: the batch's accepted rows, each with its own window
 *    [t, t + gap) (bigint epoch µs and timestamptz), marked late by Spark's rule
 *    (t + gap <= watermark of earlier batches) or because its own window touches
 *    a session already final (the stream never reopens a final row: the
 *    correction merges it).
 * 2. `registerLateSessionEvents`: late events into `straggler.late_events` and
 *    `straggler.late_windows` under their own window, as dropped pairs.
 * 3. `mergeSessions`: the on-time events and the key's open sessions merged into
 *    islands (gaps and islands over the windows, touching ones merge); a session
 *    row whose bounds an island changes is deleted and recorded in
 *    `straggler.session_retractions` (extended; merged when the island holds two
 *    or more rows), pruning the stream's earlier retractions it covers (their
 *    removed rows lie inside the island), and each island is upserted with its
 *    full aggregates.
 *
 * Instants are bigint epoch µs inside the statements (fragments/windowAssignment.ts).
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { CHANGE_COLUMNS, changeRow, stored } from "../fragments/changeRows.js";
import { notSuperseded } from "../fragments/superseded.js";
import { storedAggregates } from "../fragments/windowAggregates.js";
import { timestamptzToUs, usToTimestamptz } from "../fragments/windowAssignment.js";
import type { BatchRange } from "./readBatch.js";
import type { LatePairs } from "./registerLatePairs.js";
import { liveVersion } from "../fragments/liveVersion.js";

const EVENTS = "session_batch_events";
const ITEMS = "session_batch_islands";

const CREATE_EVENTS_SQL = `CREATE TEMP TABLE IF NOT EXISTS ${EVENTS} (seq bigint, group_key text, value numeric,
  t_us bigint, ws timestamptz, we timestamptz, late boolean) ON COMMIT DELETE ROWS`;
const CREATE_ITEMS_SQL = `CREATE TEMP TABLE IF NOT EXISTS ${ITEMS} (group_key text, s_us bigint, e_us bigint,
  n bigint, s numeric, lo numeric, hi numeric, rows int, events int, rev int, corr boolean) ON COMMIT DELETE ROWS`;

/* $1 pipeline, $2/$3 the seq range, $4 watermark µs (null: none), $5 gap µs. */
const STAGE_SQL = `INSERT INTO ${EVENTS}
SELECT b.seq, b.group_key, b.value, x.t_us, b.event_time, ${usToTimestamptz("x.t_us + $5::bigint")},
       ($4::bigint IS NOT NULL AND x.t_us + $5::bigint <= $4::bigint)
  FROM straggler.bronze_events b CROSS JOIN LATERAL (SELECT ${timestamptzToUs("b.event_time")} AS t_us) x
 WHERE b.pipeline = $1 AND b.seq > $2 AND b.seq <= $3 AND b.status = 'accepted' AND ${notSuperseded("b", "$3")}`;

/*
 * An on-time event whose own window touches a final session of its key: the stream does not
 * reopen final rows. A key's sessions never overlap, so only the last final one starting at or
 * before the event's window ends can touch it (one index probe, not a scan of the key's history).
 */
const MARK_TOUCHING_FINAL_SQL = `UPDATE ${EVENTS} e SET late = true
 WHERE NOT e.late AND (SELECT r.window_end FROM straggler.window_results_table r
        WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND r.group_key = e.group_key AND r.is_final AND r.window_start <= e.we
        ORDER BY r.window_start DESC LIMIT 1) >= e.ws`;

const REGISTER_SQL = `WITH ev AS (
  INSERT INTO straggler.late_events (pipeline, seq, group_key, window_start, window_end, batch_id, event_id)
  SELECT $1, e.seq, e.group_key, e.ws, e.we, $2, b.event_id
    FROM ${EVENTS} e JOIN straggler.bronze_events b ON b.pipeline = $1 AND b.seq = e.seq WHERE e.late
  ON CONFLICT DO NOTHING RETURNING 1
), win AS (
  INSERT INTO straggler.late_windows AS l (pipeline, group_key, window_start, window_end, dropped_rows, max_seq, first_batch_id, last_batch_id)
  SELECT $1, group_key, ws, we, count(*), max(seq), $2, $2 FROM ${EVENTS} WHERE late GROUP BY group_key, ws, we
  ON CONFLICT (pipeline, group_key, window_start, window_end) DO UPDATE
    SET dropped_rows = l.dropped_rows + excluded.dropped_rows, max_seq = greatest(l.max_seq, excluded.max_seq), last_batch_id = excluded.last_batch_id
  RETURNING 1
)
SELECT (SELECT count(*) FROM ev)::int AS pairs, (SELECT count(*) FROM win)::int AS windows`;

/*
 * Islands over the on-time events' windows and the open sessions of their keys: sorted by start,
 * an item starts an island when it starts after every earlier item of its key has ended
 * (touching merges). Only islands holding an event of the batch are kept.
 */
const ISLANDS_SQL = `INSERT INTO ${ITEMS}
WITH items AS (
  SELECT group_key, t_us AS s_us, t_us + $2::bigint AS e_us, 1::bigint AS n, value AS s, value AS lo, value AS hi,
         NULL::int AS rev, NULL::boolean AS corr, false AS is_row
    FROM ${EVENTS} WHERE NOT late
  UNION ALL
  SELECT r.group_key, ${timestamptzToUs("r.window_start")}, ${timestamptzToUs("r.window_end")}, r.event_count, r.value_sum, r.value_min, r.value_max,
         r.revision, r.corrected, true
    FROM straggler.window_results_table r
   WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND NOT r.is_final AND r.group_key IN (SELECT group_key FROM ${EVENTS} WHERE NOT late)
), marked AS (
  SELECT *, CASE WHEN s_us <= max(e_us) OVER (PARTITION BY group_key ORDER BY s_us, e_us ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                 THEN 0 ELSE 1 END AS starts
    FROM items
), numbered AS (
  SELECT *, sum(starts) OVER (PARTITION BY group_key ORDER BY s_us, e_us ROWS UNBOUNDED PRECEDING) AS island FROM marked
)
SELECT group_key, min(s_us), max(e_us), sum(n), sum(s), min(lo), max(hi),
       count(*) FILTER (WHERE is_row), count(*) FILTER (WHERE NOT is_row), max(rev), coalesce(bool_or(corr), false)
  FROM numbered GROUP BY group_key, island
HAVING count(*) FILTER (WHERE NOT is_row) > 0`;

/*
 * Open rows inside a batch's island whose bounds the island changes: removed, kept in the
 * retractions. The stream's earlier retractions (extended, merged) of the key whose removed row
 * lies inside an island that retracts now are pruned in the same statement: the new retraction
 * covers them (README "Session windows": it retracts every row of its key inside its
 * replacement), so a key keeps the stream retractions of the last batch that changed each of
 * its sessions, not one per batch. With the change feed (`feed`), each removed row is a `retracted` change.
 */
const retractSql = (feed: boolean) => `WITH gone AS (
  DELETE FROM straggler.window_results_table r USING ${ITEMS} i
   WHERE r.pipeline = $1 AND r.version = ${liveVersion()} AND r.group_key = i.group_key AND NOT r.is_final
     AND r.window_start >= ${usToTimestamptz("i.s_us")} AND r.window_end <= ${usToTimestamptz("i.e_us")}
     AND (r.window_start, r.window_end) <> (${usToTimestamptz("i.s_us")}, ${usToTimestamptz("i.e_us")})
  RETURNING r.*, i.rows AS island_rows, i.s_us, i.e_us
), covered AS (
  DELETE FROM straggler.session_retractions x USING (SELECT DISTINCT group_key, s_us, e_us FROM gone) g
   WHERE x.pipeline = $1 AND x.group_key = g.group_key AND x.reason IN ('extended', 'merged')
     AND x.window_start >= ${usToTimestamptz("g.s_us")} AND x.window_end <= ${usToTimestamptz("g.e_us")}
)${
  feed
    ? `, feed AS (
  INSERT INTO straggler.window_changes (${CHANGE_COLUMNS}, batch_id)
  SELECT ${changeRow({ pipeline: "$1", change: "'retracted'", key: "group_key", start: "window_start", end: "window_end", revision: "revision", before: stored("gone"), after: null })}, $2
    FROM gone ORDER BY group_key, window_start
)`
    : ""
}
INSERT INTO straggler.session_retractions (pipeline, group_key, window_start, window_end, event_count, value_sum, value_min, value_max,
  revision, was_final, reason, batch_id, replaced_by_start, replaced_by_end)
SELECT pipeline, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, revision, false,
       CASE WHEN island_rows >= 2 THEN 'merged' ELSE 'extended' END, $2, ${usToTimestamptz("s_us")}, ${usToTimestamptz("e_us")}
  FROM gone ORDER BY group_key, window_start`;

/*
 * Each island as one row: its full aggregates (an unchanged row's own are part of them), not a delta.
 * With the change feed (`feed`), the change of each island (src/db/sql/fragments/changeRows.ts): the stored row with the
 * island's bounds before the upsert (the rows whose bounds changed were retracted just before), or none.
 */
const upsertSql = (feed: boolean) => `${
  feed
    ? `WITH feed AS (
  INSERT INTO straggler.window_changes (${CHANGE_COLUMNS}, batch_id)
  SELECT ${changeRow({
    pipeline: "$1",
    change: "CASE WHEN t.pipeline IS NULL THEN 'new' ELSE 'updated' END",
    key: "i.group_key",
    start: usToTimestamptz("i.s_us"),
    end: usToTimestamptz("i.e_us"),
    revision: "coalesce(t.revision, i.rev, 1)",
    before: stored("t"),
    after: ["i.n", "i.s", "i.lo", "i.hi"],
  })}, $2
    FROM ${ITEMS} i LEFT JOIN straggler.window_results_table t
      ON t.pipeline = $1 AND t.version = ${liveVersion()} AND t.group_key = i.group_key AND t.window_start = ${usToTimestamptz("i.s_us")} AND t.window_end = ${usToTimestamptz("i.e_us")}
   WHERE t.pipeline IS NULL OR (${storedAggregates("t")}) IS DISTINCT FROM (i.n, i.s, i.lo, i.hi)
)
`
    : ""
}INSERT INTO straggler.window_results_table AS t
  (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, revision, corrected, last_batch_id)
SELECT $1, ${liveVersion()}, group_key, ${usToTimestamptz("s_us")}, ${usToTimestamptz("e_us")}, n, s, lo, hi, coalesce(rev, 1), corr, $2 FROM ${ITEMS}
ON CONFLICT (pipeline, version, group_key, window_start, window_end) DO UPDATE
  SET event_count = excluded.event_count, value_sum = excluded.value_sum, value_min = excluded.value_min, value_max = excluded.value_max,
      last_batch_id = excluded.last_batch_id, updated_at = now()`;

/**
 * Step 1: stages the batch's accepted rows of `range` with their own windows, marked late.
 * @param watermarkUs the watermark of earlier batches, epoch µs; null before the first batch
 * @param gapMs the session gap, ms
 */
export async function stageSessionEvents(
  client: PoolClient,
  pipeline: string,
  range: BatchRange,
  watermarkUs: bigint | null,
  gapMs: number,
): Promise<void> {
  await client.query(CREATE_EVENTS_SQL);
  await client.query(CREATE_ITEMS_SQL);
  const gap = (BigInt(gapMs) * 1000n).toString();
  await client.query(
    prepared("session_stage", STAGE_SQL, [
      pipeline,
      range.afterSeq,
      range.lastSeq,
      watermarkUs?.toString() ?? null,
      gap,
    ]),
  );
  await client.query(prepared("session_touch_final", MARK_TOUCHING_FINAL_SQL, [pipeline]));
}

/** Step 2: records the staged late events as batch `batchId`'s dropped pairs; a pair already recorded is not counted again. */
export async function registerLateSessionEvents(
  client: PoolClient,
  pipeline: string,
  batchId: number,
): Promise<LatePairs> {
  return (await client.query(prepared("session_register_late", REGISTER_SQL, [pipeline, batchId])))
    .rows[0] as LatePairs;
}

/**
 * Step 3: merges the staged on-time events into the open sessions, retracting superseded rows.
 * @param feed the pipeline keeps a change feed (`feed.enabled`): the same statements write the changes
 * @returns sessions written (inserted or updated) and rows retracted
 */
export async function mergeSessions(
  client: PoolClient,
  pipeline: string,
  batchId: number,
  gapMs: number,
  feed = false,
): Promise<{ written: number; retracted: number }> {
  const gap = (BigInt(gapMs) * 1000n).toString();
  const suffix = feed ? "_feed" : "";
  await client.query(prepared("session_islands", ISLANDS_SQL, [pipeline, gap]));
  const retracted =
    (await client.query(prepared(`session_retract${suffix}`, retractSql(feed), [pipeline, batchId]))).rowCount ?? 0;
  const written =
    (await client.query(prepared(`session_upsert${suffix}`, upsertSql(feed), [pipeline, batchId]))).rowCount ?? 0;
  return { written, retracted };
}
