/**
 * A version's classification of the ledger (`straggler.event_classifications`,
 * `straggler.superseded_versions`; src/lifecycle/rebuild.ts): bronze's raw rows
 * read page by page, their new classification written beside them, and the
 * dedupe of `admission.dedupe` run on it as a landing runs it on bronze
 * (src/db/sql/ingest/dedupeLanding.ts: the same rules, the same details).
 * Each row is marked `differs` when its classification differs from bronze's
 * (drizzle/0037: what a cutover rewrites); a catch-up of a version that holds
 * only its difference first adds the rows its dedupe reads, from bronze.
 */
import { bronzeRaw } from "../fragments/bronzeRaw.js";
import { ingestionTimeJoined, joinSourceOf } from "../fragments/ingestionTime.js";
import { sameEventId } from "../fragments/eventIdKey.js";
import type { Queryable } from "../../pool.js";
import { timestamptzToUs } from "../fragments/windowAssignment.js";

/** A bronze row's raw columns, as a rebuild reads them. Instants as epoch µs / ms; `oldReason` is the live classification. */
export interface RawBronzeRow {
  seq: number;
  eventId: string;
  raw: string;
  ingestionUs: bigint;
  landedMs: number;
  source: string;
  sourceLine: number;
  oldStatus: string;
  oldReason: string | null;
  oldDetail: string | null;
}

const PAGE_SQL = `SELECT seq, event_id, ${bronzeRaw("")} AS raw, ${timestamptzToUs(ingestionTimeJoined(""))}::text AS ingestion_us,
       (extract(epoch from landed_at) * 1000)::float8 AS landed_ms,
       its.source_name AS source, source_line, status, reason, detail
  FROM straggler.bronze_events ${joinSourceOf("")}
 WHERE pipeline = $1 AND seq > $2 AND seq <= $3
 ORDER BY seq LIMIT $4`;

/** The next `limit` bronze rows of `pipeline` with `after < seq <= upTo`, by seq. */
export async function readBronzePage(
  client: Queryable,
  pipeline: string,
  after: number,
  upTo: number,
  limit: number,
): Promise<RawBronzeRow[]> {
  const { rows } = await client.query(PAGE_SQL, [pipeline, after, upTo, limit]);
  return rows.map((r) => ({
    seq: Number(r.seq),
    eventId: r.event_id,
    raw: r.raw,
    ingestionUs: BigInt(r.ingestion_us),
    landedMs: Math.floor(r.landed_ms),
    source: r.source,
    sourceLine: r.source_line,
    oldStatus: r.status,
    oldReason: r.reason,
    oldDetail: r.detail,
  }));
}

/** One row's classification under a version. `eventTime` ISO 8601 (µs kept); `value` a numeric string. */
export interface Classification {
  seq: number;
  eventId: string;
  eventTime: string | null;
  groupKey: string;
  value: string | null;
  status: "accepted" | "quarantined";
  reason: string | null;
  detail: string | null;
}

/** A row's classification, in the order bronze's and a version's are compared. */
const CLASSIFICATION = (a: string) =>
  ["status", "reason", "detail", "event_time", "group_key", "value"].map((c) => `${a}.${c}`).join(", ");
const DIFFERS = (a: string, b: string) => `((${CLASSIFICATION(a)}) IS DISTINCT FROM (${CLASSIFICATION(b)}))`;

const INSERT_SQL = `INSERT INTO straggler.event_classifications (pipeline, version, seq, event_id, event_time, group_key, value, status, reason, detail, differs)
SELECT $1, $2, u.*, b.seq IS NULL OR ${DIFFERS("u", "b")}
  FROM unnest($3::bigint[], $4::text[], $5::timestamptz[], $6::text[], $7::numeric[], $8::text[], $9::text[], $10::text[])
       AS u(seq, event_id, event_time, group_key, value, status, reason, detail)
  LEFT JOIN straggler.bronze_events b ON b.pipeline = $1 AND b.seq = u.seq
ON CONFLICT (pipeline, version, seq) DO UPDATE SET event_id = EXCLUDED.event_id, event_time = EXCLUDED.event_time, group_key = EXCLUDED.group_key,
  value = EXCLUDED.value, status = EXCLUDED.status, reason = EXCLUDED.reason, detail = EXCLUDED.detail, differs = EXCLUDED.differs`;

/** Writes (or rewrites) the classification of `rows` under `version`, each marked against bronze's. */
export async function insertClassifications(
  client: Queryable,
  pipeline: string,
  version: number,
  rows: Classification[],
): Promise<void> {
  if (rows.length === 0) return;
  await client.query(INSERT_SQL, [
    pipeline,
    version,
    rows.map((r) => r.seq),
    rows.map((r) => r.eventId),
    rows.map((r) => r.eventTime),
    rows.map((r) => r.groupKey),
    rows.map((r) => r.value),
    rows.map((r) => r.status),
    rows.map((r) => r.reason),
    rows.map((r) => r.detail),
  ]);
}

const sameContent = (a: string, b: string) =>
  `(${a}.event_time IS NOT DISTINCT FROM ${b}.event_time AND ${a}.group_key = ${b}.group_key AND ${a}.value IS NOT DISTINCT FROM ${b}.value)`;
const version = (alias: string) => `${alias}.pipeline = $1 AND ${alias}.version = $2`;
/*
 * Written so the plan cannot depend on statistics (the table is new while a rebuild fills it):
 * a probe for earlier rows of an event id is a scalar subquery with LIMIT over the event-id
 * index, with `seq + 0` so the primary key's seq range is never walked instead (as
 * src/db/sql/ingest/dedupeLanding.ts does on bronze).
 */
const currentVersion = (row: string, what: string) => `(SELECT ${what} FROM straggler.event_classifications o
         WHERE ${version("o")} AND o.event_id = ${row}.event_id AND o.seq + 0 < ${row}.seq AND o.status = 'accepted'
           AND NOT EXISTS (SELECT 1 FROM straggler.superseded_versions s WHERE ${version("s")} AND s.seq = o.seq)
         ORDER BY o.seq + 0 DESC LIMIT 1)`;

/* Params: $1 pipeline, $2 version, $3 rows with seq > $3 are the page's. */
const FIRST_SQL = `UPDATE straggler.event_classifications b
   SET status = 'quarantined', reason = 'DUPLICATE', detail = 'an accepted record with this event id is already in bronze'
 WHERE ${version("b")} AND b.seq > $3 AND b.status = 'accepted'
   AND (SELECT 1 FROM straggler.event_classifications o
         WHERE ${version("o")} AND o.event_id = b.event_id AND o.seq + 0 < b.seq AND o.status = 'accepted' LIMIT 1) IS NOT NULL`;
const AMENDED_SQL = `UPDATE straggler.event_classifications b
   SET reason = 'AMENDED_DUPLICATE',
       detail = 'an accepted record with this event id and other content (event time, group key or value) is already in bronze; the first version stays (admission.dedupe: first)'
 WHERE ${version("b")} AND b.seq > $3 AND b.status = 'quarantined' AND b.reason = 'DUPLICATE'
   AND ${currentVersion("b", `NOT ${sameContent("o", "b")}`)}`;
const LATEST_SQL = `UPDATE straggler.event_classifications b
   SET status = 'quarantined', reason = 'DUPLICATE', detail = 'an accepted record with this event id and the same content is already in bronze'
 WHERE ${version("b")} AND b.seq > $3 AND b.status = 'accepted'
   AND ${currentVersion("b", sameContent("o", "b"))}`;
const SUPERSEDE_SQL = `INSERT INTO straggler.superseded_versions (pipeline, version, seq, event_id, superseded_by)
SELECT $1, $2, v.seq, v.event_id, v.next_seq
  FROM (SELECT c.seq, c.event_id, lead(c.seq) OVER (PARTITION BY c.event_id ORDER BY c.seq) AS next_seq
          FROM straggler.event_classifications c
         WHERE ${version("c")} AND c.status = 'accepted'
           AND c.event_id = ANY (ARRAY(SELECT n.event_id FROM straggler.event_classifications n WHERE ${version("n")} AND n.seq > $3 AND n.status = 'accepted'))
           AND NOT EXISTS (SELECT 1 FROM straggler.superseded_versions s WHERE ${version("s")} AND s.seq = c.seq)) v
 WHERE v.next_seq IS NOT NULL`;

/**
 * Runs the dedupe of `mode` over the rows of `version` with seq above `after`
 * (the page just classified) against every row before them, as a landing does.
 */
export async function dedupeClassifications(
  client: Queryable,
  pipeline: string,
  version: number,
  after: number,
  mode: "first" | "latest",
): Promise<void> {
  const params = [pipeline, version, after];
  if (mode === "first") {
    const n = (await client.query(FIRST_SQL, params)).rowCount ?? 0;
    if (n > 0) await client.query(AMENDED_SQL, params);
    return;
  }
  await client.query(LATEST_SQL, params);
  await client.query(SUPERSEDE_SQL, params);
}

/* $1 pipeline, $2 version, rows with $3 < seq <= $4; $5 true: only rows a dedupe may have rewritten. */
const MARK_SQL = `UPDATE straggler.event_classifications c SET differs = NOT c.differs
  FROM straggler.bronze_events b
 WHERE c.pipeline = $1 AND c.version = $2 AND c.seq > $3 AND c.seq <= $4 AND b.pipeline = $1 AND b.seq = c.seq
   AND (NOT $5 OR c.reason IN ('DUPLICATE', 'AMENDED_DUPLICATE'))
   AND c.differs IS DISTINCT FROM ${DIFFERS("c", "b")}`;

/**
 * Marks again, against bronze's, the rows of `version` with `after < seq <= upTo` (`dedupedOnly`: those a
 * dedupe may have rewritten, DUPLICATE or AMENDED_DUPLICATE); writes only the rows whose mark changes.
 * @returns the rows whose mark changed
 */
export async function markClassifications(
  client: Queryable,
  pipeline: string,
  version: number,
  after: number,
  upTo: number,
  dedupedOnly: boolean,
): Promise<number> {
  return (await client.query(MARK_SQL, [pipeline, version, after, upTo, dedupedOnly])).rowCount ?? 0;
}

/*
 * $1 pipeline, $2 version, $3 the version's checkpoint seq, $4 event ids: one probe of the event-id index an id, whatever
 * the statistics (`OFFSET 0` keeps the lateral a probe, not a join the planner may hash over the pipeline's seq range;
 * `pipeline || ''` leaves it no index but the event-id one, as in src/db/sql/ingest/dedupeLanding.ts).
 */
const FILL_EVENT_IDS_SQL = `INSERT INTO straggler.event_classifications (pipeline, version, seq, event_id, event_time, group_key, value, status, reason, detail, differs)
SELECT $1, $2, b.seq, b.event_id, b.event_time, b.group_key, b.value, b.status, b.reason, b.detail, false
  FROM (SELECT DISTINCT id FROM unnest($4::text[]) AS u(id)) x
  CROSS JOIN LATERAL (SELECT * FROM straggler.bronze_events b
                       WHERE ${sameEventId("b.event_id", "x.id")} AND b.status = 'accepted' AND b.pipeline || '' = $1 AND b.seq <= $3
                      OFFSET 0) b
 WHERE NOT EXISTS (SELECT 1 FROM straggler.event_classifications c WHERE c.pipeline = $1 AND c.version = $2 AND c.seq = b.seq)
ON CONFLICT (pipeline, version, seq) DO NOTHING`;

/**
 * Adds to `version` (which holds only its difference from bronze up to seq `upTo`) bronze's accepted rows up
 * to `upTo` with one of `eventIds` that it lacks: they are its own (unmarked), and its dedupe reads them.
 */
export async function fillEventIds(
  client: Queryable,
  pipeline: string,
  version: number,
  upTo: number,
  eventIds: string[],
): Promise<void> {
  if (eventIds.length > 0) await client.query(FILL_EVENT_IDS_SQL, [pipeline, version, upTo, eventIds]);
}
