/**
 * The lateness histogram carried with the policy version (issue 26 item 2, docs/lateness.md,
 * migration 0044). The live version's histogram is `straggler.lateness_histogram` with its
 * per-window state `straggler.lateness_windows` (migration 0034; the stream adds each batch:
 * ./histogramUpdate.ts); a stored version's is kept beside its results in
 * `straggler.version_lateness_histogram` and `straggler.version_lateness_windows`, with what it has
 * counted in `straggler.version_lateness_coverage`.
 *
 *   - a rebuild counts its candidate's histogram from the candidate's classification over the
 *     recorded batches (`countVersionHistogram` from nothing: O(ledger), as the rebuild itself);
 *   - a cutover counts into the target's the batches recorded since it was counted (O(the rows of
 *     those batches), which the cutover's catch-up reads anyway), stores the live histogram under
 *     the live version's number (`stashLiveHistogram`) and puts the target's in its place
 *     (`restoreVersionHistogram`): O(histogram rows + late windows), never the ledger.
 *
 * A batch's rows and pairs are counted as the stream counts them (./histogramUpdate.ts): the
 * version's accepted rows with `start_offset < seq <= end_offset` of a recorded batch, late
 * against M, the max accepted event time of the version's rows with `seq <= start_offset` (what
 * the checkpoint held when the batch began). A version's classification of a row is its own row of
 * `straggler.event_classifications` where it holds one, else bronze's (a stored version holds its
 * difference from bronze: src/db/sql/lifecycle/versionSwap.ts). Supersessions (`admission.dedupe:
 * latest`) are not applied: the advisor replays bronze for such pipelines and never reads it.
 */
import type { WindowSpec } from "../../../core/windows.js";
import type { Queryable } from "../../pool.js";
import { ingestionTimeOf } from "../fragments/ingestionTime.js";
import { timestamptzToUs, windowEndUs, windowsLateralUs } from "../fragments/windowAssignment.js";

/** What a stored version's histogram has counted: batches up to `throughBatchId`, and M for the next batch. */
export interface HistogramCoverage {
  /** The last recorded batch counted (every batch before it counted too); -1: none. */
  throughBatchId: number;
  /** `mUs` is the max accepted event time (epoch µs, null: none) of the version's rows with `seq <= mSeq`. */
  mSeq: number;
  mUs: bigint | null;
}

/** Counting from nothing (a rebuild's candidate). */
export const NOTHING_COUNTED: HistogramCoverage = { throughBatchId: -1, mSeq: 0, mUs: null };

/*
 * $1 pipeline, $2 version, $3 the last batch counted, $4 M's seq, $5 M (epoch µs or null), $6 no batch ending past this seq.
 * The version's accepted rows and the batches' starts are ordered by seq (a row at a batch's start offset before it)
 * and read in one pass, with no join: at a start, the running max of event times is M of that batch; at a row, the
 * latest start before it gives its batch, that batch's M and end (all three grow with seq), and the row counts when
 * it is at or before that end. A version's row is probed by primary key (LATERAL with LIMIT, which the planner keeps a probe: never a scan of its
 * classification).
 */
function countSql(spec: WindowSpec): string {
  return `WITH bp AS MATERIALIZED (
       SELECT batch_id, start_offset, end_offset FROM straggler.batch_progress
        WHERE pipeline = $1 AND batch_id > $3 AND end_offset <= $6),
     acc AS MATERIALIZED (
       SELECT b.seq, coalesce(t.event_time, b.event_time) AS event_time, coalesce(t.group_key, b.group_key) AS group_key, ${ingestionTimeOf("b")} AS ingestion_time
         FROM straggler.bronze_events b
         LEFT JOIN LATERAL (SELECT t.status, t.event_time, t.group_key FROM straggler.event_classifications t
                             WHERE t.pipeline = $1 AND t.version = $2 AND t.seq = b.seq LIMIT 1) t ON true
        WHERE b.pipeline = $1 AND b.seq > $4 AND b.seq <= (SELECT coalesce(max(end_offset), $4) FROM bp)
          AND coalesce(t.status, b.status) = 'accepted'),
     seqd AS (
       SELECT seq, 0 AS kind, ${timestamptzToUs("event_time")} AS e_us, NULL::bigint AS batch_id, NULL::bigint AS end_offset, event_time, group_key,
              (((extract(epoch from ingestion_time) - extract(epoch from event_time)) * 1000000)::bigint) AS lateness_us
         FROM acc
       UNION ALL SELECT start_offset, 1, NULL, batch_id, end_offset, NULL, NULL, NULL FROM bp),
     marks AS (
       SELECT kind, seq, event_time, group_key, lateness_us, batch_id, end_offset,
              CASE WHEN kind = 1 THEN greatest(max(e_us) OVER w, $5::bigint) END AS m_at_start
         FROM seqd WINDOW w AS (ORDER BY seq, kind ROWS UNBOUNDED PRECEDING)),
     run AS MATERIALIZED (
       SELECT kind, seq, event_time, group_key, lateness_us,
              max(batch_id) OVER w AS in_batch, max(end_offset) OVER w AS batch_end, max(m_at_start) OVER w AS m_us
         FROM marks WINDOW w AS (ORDER BY seq, kind ROWS UNBOUNDED PRECEDING)),
     r AS (SELECT seq, event_time, group_key, lateness_us, m_us FROM run WHERE kind = 0 AND in_batch IS NOT NULL AND seq <= batch_end),
     lpw AS (SELECT r.seq, r.group_key, ${windowEndUs(spec)} AS we_us, r.m_us FROM r ${windowsLateralUs(spec, "r")}),
     lp AS (SELECT seq, group_key, we_us, (m_us - we_us) / 1000 AS slack_ms FROM lpw WHERE m_us >= we_us),
     lw AS (SELECT group_key, we_us, max(slack_ms) AS slack_ms FROM lp GROUP BY group_key, we_us),
     lprev AS (SELECT w.slack_ms FROM lw JOIN LATERAL (
                 SELECT w.slack_ms FROM straggler.version_lateness_windows w
                  WHERE w.pipeline = $1 AND w.version = $2 AND w.group_key = lw.group_key AND w.window_end_us = lw.we_us) w ON true),
     lwin AS (
       INSERT INTO straggler.version_lateness_windows AS w (pipeline, version, group_key, window_end_us, slack_ms)
       SELECT $1, $2, group_key, we_us, slack_ms FROM lw
       ON CONFLICT (pipeline, version, group_key, window_end_us) DO UPDATE SET slack_ms = greatest(w.slack_ms, excluded.slack_ms)),
     lhist AS (
       INSERT INTO straggler.version_lateness_histogram AS h (pipeline, version, measure, value, rows)
       SELECT $1, $2, measure, value, sum(n) FROM (
                SELECT 'lateness_us' AS measure, lateness_us AS value, 1 AS n FROM r
                UNION ALL SELECT 'pair_slack_ms', slack_ms, 1 FROM lp
                UNION ALL SELECT 'event_slack_ms', max(slack_ms), 1 FROM lp GROUP BY seq
                UNION ALL SELECT 'window_slack_ms', slack_ms, 1 FROM lw
                UNION ALL SELECT 'window_slack_ms', slack_ms, -1 FROM lprev
                UNION ALL SELECT 'batches', 0, count(*) FROM bp HAVING count(*) > 0) x
        GROUP BY measure, value
       ON CONFLICT (pipeline, version, measure, value) DO UPDATE SET rows = h.rows + excluded.rows),
     cov AS (
       INSERT INTO straggler.version_lateness_coverage AS c (pipeline, version, through_batch_id, m_seq, m_us)
       SELECT $1, $2, coalesce(max(batch_id), $3), coalesce(max(end_offset), $4),
              greatest($5::bigint, (SELECT max(${timestamptzToUs("event_time")}) FROM acc)) FROM bp
       ON CONFLICT (pipeline, version) DO UPDATE SET through_batch_id = excluded.through_batch_id, m_seq = excluded.m_seq, m_us = excluded.m_us)
SELECT count(*)::int AS batches FROM bp`;
}

/**
 * Counts into the stored histogram of `version` of `pipeline` every recorded batch after `from.throughBatchId`
 * ending at or before `upToSeq`, under the version's classification (see the module comment), with `spec` its
 * windows; records what it has counted then.
 * @returns the batches counted
 * @throws database errors
 */
export async function countVersionHistogram(
  client: Queryable,
  pipeline: string,
  version: number,
  spec: WindowSpec,
  from: HistogramCoverage,
  upToSeq: number,
): Promise<number> {
  const { rows } = await client.query(countSql(spec), [
    pipeline,
    version,
    from.throughBatchId,
    from.mSeq,
    from.mUs?.toString() ?? null,
    upToSeq,
  ]);
  return rows[0].batches as number;
}

/** What the stored histogram of `version` has counted; undefined when the version keeps none. */
export async function readHistogramCoverage(
  client: Queryable,
  pipeline: string,
  version: number,
): Promise<HistogramCoverage | undefined> {
  const { rows } = await client.query(
    "SELECT through_batch_id::int AS through, m_seq::bigint::text AS m_seq, m_us::text FROM straggler.version_lateness_coverage WHERE pipeline = $1 AND version = $2",
    [pipeline, version],
  );
  const r = rows[0] as { through: number; m_seq: string; m_us: string | null } | undefined;
  return r === undefined
    ? undefined
    : { throughBatchId: r.through, mSeq: Number(r.m_seq), mUs: r.m_us === null ? null : BigInt(r.m_us) };
}

const VERSION_HISTOGRAM_TABLES = [
  "version_lateness_histogram",
  "version_lateness_windows",
  "version_lateness_coverage",
];

/** Removes the stored histogram of `version` of `pipeline` (it then keeps none). */
export async function dropVersionHistogram(client: Queryable, pipeline: string, version: number): Promise<void> {
  for (const t of VERSION_HISTOGRAM_TABLES)
    await client.query(`DELETE FROM straggler.${t} WHERE pipeline = $1 AND version = $2`, [pipeline, version]);
}

/*
 * $1 pipeline, $2 version. The live histogram has counted every batch it was kept for, up to the last recorded one;
 * M of the next batch is the checkpoint's max event time, over the rows up to its offset.
 */
const STASH_COVERAGE_SQL = `INSERT INTO straggler.version_lateness_coverage (pipeline, version, through_batch_id, m_seq, m_us)
SELECT $1, $2, coalesce((SELECT max(batch_id) FROM straggler.batch_progress WHERE pipeline = $1), -1),
       coalesce(k.last_offset, 0), ${timestamptzToUs("k.max_event_time")}
  FROM (SELECT 1) one LEFT JOIN straggler.checkpoints k ON k.pipeline = $1
 WHERE EXISTS (SELECT 1 FROM straggler.lateness_histogram WHERE pipeline = $1)`;

/**
 * Stores the live histogram of `pipeline` under `version` (the live version's number), replacing what was stored
 * of it; a pipeline that keeps no live histogram (no row) stores none.
 */
export async function stashLiveHistogram(client: Queryable, pipeline: string, version: number): Promise<void> {
  const p = [pipeline, version];
  await dropVersionHistogram(client, pipeline, version);
  await client.query(
    "INSERT INTO straggler.version_lateness_histogram (pipeline, version, measure, value, rows) SELECT pipeline, $2, measure, value, rows FROM straggler.lateness_histogram WHERE pipeline = $1",
    p,
  );
  await client.query(
    "INSERT INTO straggler.version_lateness_windows (pipeline, version, group_key, window_end_us, slack_ms) SELECT pipeline, $2, group_key, window_end_us, slack_ms FROM straggler.lateness_windows WHERE pipeline = $1",
    p,
  );
  await client.query(STASH_COVERAGE_SQL, p);
}

/**
 * Puts the stored histogram of `version` of `pipeline` in the live places (none stored: the live ones emptied) and
 * removes its stored copy.
 */
export async function restoreVersionHistogram(client: Queryable, pipeline: string, version: number): Promise<void> {
  const p = [pipeline, version];
  await client.query("DELETE FROM straggler.lateness_histogram WHERE pipeline = $1", [pipeline]);
  await client.query("DELETE FROM straggler.lateness_windows WHERE pipeline = $1", [pipeline]);
  await client.query(
    "INSERT INTO straggler.lateness_histogram (pipeline, measure, value, rows) SELECT pipeline, measure, value, rows FROM straggler.version_lateness_histogram WHERE pipeline = $1 AND version = $2 AND rows <> 0",
    p,
  );
  await client.query(
    "INSERT INTO straggler.lateness_windows (pipeline, group_key, window_end_us, slack_ms) SELECT pipeline, group_key, window_end_us, slack_ms FROM straggler.version_lateness_windows WHERE pipeline = $1 AND version = $2",
    p,
  );
  await dropVersionHistogram(client, pipeline, version);
}

/**
 * Whether rows of `pipeline` past `seq` are archived and not restored (src/retention/archive.ts): a count over
 * them would miss those rows. One row per archive of the pipeline.
 */
export async function archivedPast(client: Queryable, pipeline: string, seq: number): Promise<boolean> {
  const { rows } = await client.query(
    "SELECT EXISTS (SELECT 1 FROM straggler.bronze_archives WHERE pipeline = $1 AND restored_at IS NULL AND (manifest->'seq'->>'max')::bigint > $2) AS past",
    [pipeline, seq],
  );
  return rows[0].past as boolean;
}
