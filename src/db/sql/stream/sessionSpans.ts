/**
 * The spans a session correction recomputes (docs/DESIGN.md "Session
 * windows", src/correction/sessions.ts): per group key, the windows that
 * start it (`sess_seeds`: the own windows [t, t + gap) of the late events
 * awaiting correction and, for a range request, the final sessions and the
 * bronze events' own windows in the range) grown until nothing outside
 * touches them — every stored session and every accepted bronze event (up to
 * the run's snapshot) whose window touches a span is inside it (`sess_spans`).
 * Inside a span, bronze alone decides the sessions: a span never cuts one.
 */
import type { PoolClient } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { notSuperseded } from "../fragments/superseded.js";
import { timestamptzToUs, usToTimestamptz } from "../fragments/windowAssignment.js";
import { liveVersion } from "../fragments/liveVersion.js";

const CREATE_SEEDS_SQL = `CREATE TEMP TABLE IF NOT EXISTS sess_seeds (group_key text, s_us bigint, e_us bigint) ON COMMIT DELETE ROWS`;
const CREATE_SPANS_SQL = `CREATE TEMP TABLE IF NOT EXISTS sess_spans (group_key text, s_us bigint, e_us bigint, ws timestamptz, we timestamptz,
  PRIMARY KEY (group_key, s_us)) ON COMMIT DELETE ROWS`;

/* $1 pipeline, $2 snapshot, $3/$4 range (null: none), $5 keys (null: all). */
const SEED_LATE_SQL = `INSERT INTO sess_seeds
SELECT group_key, ${timestamptzToUs("window_start")}, ${timestamptzToUs("window_end")} FROM straggler.late_events
 WHERE pipeline = $1 AND seq <= $2
   AND ($3::timestamptz IS NULL OR (window_start < $4 AND window_end > $3))
   AND ($5::text[] IS NULL OR group_key = ANY($5))`;

const SEED_STORED_SQL = `INSERT INTO sess_seeds
SELECT group_key, ${timestamptzToUs("window_start")}, ${timestamptzToUs("window_end")} FROM straggler.window_results_table
 WHERE pipeline = $1 AND version = ${liveVersion()} AND is_final AND window_start < $3 AND window_end > $2
   AND ($4::text[] IS NULL OR group_key = ANY($4))`;

/* $6 gap µs, $7 watermark: events whose own window ends at or before it (the stream has closed them). */
const SEED_BRONZE_SQL = `INSERT INTO sess_seeds
SELECT b.group_key, x.t_us, x.t_us + $6::bigint
  FROM straggler.bronze_events b CROSS JOIN LATERAL (SELECT ${timestamptzToUs("b.event_time")} AS t_us) x
 WHERE b.pipeline = $1 AND b.status = 'accepted' AND b.seq + 0 <= $2 AND ${notSuperseded("b", "$2")}
   AND b.event_time < $4 AND b.event_time > $3::timestamptz - $6::bigint * interval '1 microsecond'
   AND b.event_time <= $7::timestamptz - $6::bigint * interval '1 microsecond'
   AND ($5::text[] IS NULL OR b.group_key = ANY($5))`;

/* The seeds' islands (touching windows merge) as the current spans. */
const SPANS_SQL = `WITH marked AS (
  SELECT *, CASE WHEN s_us <= max(e_us) OVER (PARTITION BY group_key ORDER BY s_us, e_us ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                 THEN 0 ELSE 1 END AS starts FROM sess_seeds
), numbered AS (
  SELECT *, sum(starts) OVER (PARTITION BY group_key ORDER BY s_us, e_us ROWS UNBOUNDED PRECEDING) AS island FROM marked
), islands AS (SELECT group_key, min(s_us) AS s_us, max(e_us) AS e_us FROM numbered GROUP BY group_key, island)
INSERT INTO sess_spans SELECT group_key, s_us, e_us, ${usToTimestamptz("s_us")}, ${usToTimestamptz("e_us")} FROM islands`;

/*
 * Stored sessions (final or open) that touch a span without lying inside it. A key's stored
 * sessions never overlap (the stream and the correction both keep them apart), so the only one
 * that can reach a span from the left is the last one starting before it: each side is one
 * index range on the results key (pipeline, group key, window start), not a scan of the key's history.
 * `OFFSET 0` keeps each LATERAL subquery a per-span index range: flattened, the planner joins on the
 * key alone and filters the ranges afterwards (a merge join over every pair of a key's rows).
 */
const GROW_STORED_SQL = `INSERT INTO sess_seeds
SELECT DISTINCT r.group_key, ${timestamptzToUs("r.window_start")}, ${timestamptzToUs("r.window_end")}
  FROM sess_spans p
 CROSS JOIN LATERAL (
   (SELECT x.group_key, x.window_start, x.window_end FROM straggler.window_results_table x
     WHERE x.pipeline = $1 AND x.version = ${liveVersion()} AND x.group_key = p.group_key AND x.window_start < p.ws ORDER BY x.window_start DESC LIMIT 1)
   UNION ALL
   (SELECT x.group_key, x.window_start, x.window_end FROM straggler.window_results_table x
     WHERE x.pipeline = $1 AND x.version = ${liveVersion()} AND x.group_key = p.group_key AND x.window_start >= p.ws AND x.window_start <= p.we OFFSET 0)
 ) r
 WHERE r.window_end >= p.ws AND NOT (r.window_start >= p.ws AND r.window_end <= p.we)`;

/*
 * Accepted bronze events whose own window touches a span without lying inside it: t in
 * [start - gap, start) or (end - gap, end], each an index range on (pipeline, group key, event time).
 */
const bronzeIn = (
  from: string,
  to: string,
) => `SELECT b.group_key, ${timestamptzToUs("b.event_time")} AS t_us FROM straggler.bronze_events b
    WHERE b.pipeline || '' = $1 AND b.group_key = p.group_key AND b.event_time ${from} AND b.event_time ${to}
      AND b.status = 'accepted' AND b.seq + 0 <= $2 AND ${notSuperseded("b", "$2")} OFFSET 0`;
const GROW_BRONZE_SQL = `INSERT INTO sess_seeds
SELECT DISTINCT e.group_key, e.t_us, e.t_us + $3::bigint
  FROM sess_spans p
 CROSS JOIN LATERAL (
   (${bronzeIn(">= p.ws - $3::bigint * interval '1 microsecond'", "< p.ws")})
   UNION ALL
   (${bronzeIn("> p.we - $3::bigint * interval '1 microsecond'", "<= p.we")})
 ) e`;

/** What the spans start from: the run's snapshot and watermark, and a range request's bounds and keys. */
export interface SpanRequest {
  /** Bronze rows up to this `seq` are read. */
  snapshot: number;
  /** The stream's watermark (ISO 8601). */
  watermark: string;
  /** Also the final sessions and the closed events overlapping `[from, to)` (ISO instants); null: only late events. */
  range: { from: string; to: string } | null;
  /** Only these stored group keys; null: all. */
  keys: string[] | null;
  /** The session gap, ms. */
  gapMs: number;
}

/**
 * Fills `sess_spans` for `req`, in the run's transaction `client`.
 * @returns the number of spans
 */
export async function collectSessionSpans(client: PoolClient, pipeline: string, req: SpanRequest): Promise<number> {
  await client.query(CREATE_SEEDS_SQL);
  await client.query(CREATE_SPANS_SQL);
  const gap = (BigInt(req.gapMs) * 1000n).toString();
  const from = req.range?.from ?? null,
    to = req.range?.to ?? null;
  await client.query(prepared("sess_seed_late", SEED_LATE_SQL, [pipeline, req.snapshot, from, to, req.keys]));
  if (req.range) {
    await client.query(prepared("sess_seed_stored", SEED_STORED_SQL, [pipeline, from, to, req.keys]));
    await client.query(
      prepared("sess_seed_bronze", SEED_BRONZE_SQL, [pipeline, req.snapshot, from, to, req.keys, gap, req.watermark]),
    );
  }
  // Each round either adds a window outside every span (the spans grow) or ends.
  for (;;) {
    await client.query("TRUNCATE sess_spans");
    const spans = (await client.query(prepared("sess_spans", SPANS_SQL))).rowCount ?? 0;
    const grown =
      ((await client.query(prepared("sess_grow_stored", GROW_STORED_SQL, [pipeline]))).rowCount ?? 0) +
      ((await client.query(prepared("sess_grow_bronze", GROW_BRONZE_SQL, [pipeline, req.snapshot, gap]))).rowCount ??
        0);
    if (grown === 0) return spans;
  }
}
