/**
 * Admission's dedupe (DESIGN §7, README "Amended events"): the accepted rows of
 * a landing whose event id was accepted before, by `admission.dedupe` mode
 * (src/core/admission.ts `DedupeMode`, where a re-send's content is defined:
 * event time, group key, value). Runs in the landing's transaction, under the
 * append lock, after the COPY: the rows it reclassifies were never visible as
 * accepted. Rows committed before are never changed: a supersession is
 * recorded in `straggler.superseded_events`.
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { eventIdKeys, sameEventId } from "../fragments/eventIdKey.js";

const DEDUPE_LANDING = "bronze_dedupe";

/**
 * Turns into DUPLICATE quarantine each accepted row of this landing (seq > $2,
 * pipeline $1) whose event id was accepted at a lower seq in this pipeline: in
 * bronze before, or earlier in this source (the statement sees the rows as
 * they were before it, so of n copies the first stays accepted). Params: $1
 * pipeline, $2 bronze's seq high water before this landing. Its row count is
 * the number of duplicates. Under `first`, `AMENDED_SQL` then renames those
 * whose content differs.
 *
 * Written so the plan cannot depend on statistics. Bronze is usually not
 * analysed since the rows just landed, and a pipeline that is new since the
 * last ANALYZE is estimated at ~0 rows, so every index leading with
 * `pipeline` looks free — which once made the probe scan a whole pipeline per
 * row. The outer scan is the (pipeline, seq) index's range `(pipeline, seq) > ($1, $2)`
 * (this landing's rows; no other index on bronze leads with `pipeline`), and
 * in the probe `pipeline || ''` is a condition no index can use, so the probe
 * can only be the event-id index (on the id's two keys: `sameEventId` names them and the id, fragments/eventIdKey.ts).
 * The probe is a scalar subquery with LIMIT, which stays one index probe per row (as EXISTS the planner may turn it
 * into a join).
 */
export const DEDUPE_SQL = `
UPDATE straggler.bronze_events b
   SET status = 'quarantined', reason = 'DUPLICATE',
       detail = 'an accepted record with this event id is already in bronze'
 WHERE b.pipeline = $1 AND b.seq > $2 AND b.status = 'accepted'
   AND (SELECT 1 FROM straggler.bronze_events o
         WHERE ${sameEventId("o.event_id", "b.event_id")} AND o.pipeline || '' = $1 AND o.seq < b.seq AND o.status = 'accepted' LIMIT 1) IS NOT NULL`;

/** SQL: true when the rows aliased `a` and `b` have the same content (event time, group key, value as numbers). */
const sameContent = (a: string, b: string) =>
  `(${a}.event_time IS NOT DISTINCT FROM ${b}.event_time AND ${a}.group_key = ${b}.group_key AND ${a}.value IS NOT DISTINCT FROM ${b}.value)`;

/** The version of an event id a row of the landing is compared with: the latest accepted, not superseded row at a lower seq. */
const currentVersion = (row: string, what: string) => `(SELECT ${what} FROM straggler.bronze_events o
         WHERE ${sameEventId("o.event_id", `${row}.event_id`)} AND o.pipeline || '' = $1 AND o.seq < ${row}.seq AND o.status = 'accepted'
           AND NOT EXISTS (SELECT 1 FROM straggler.superseded_events s WHERE s.seq = o.seq)
         ORDER BY o.seq DESC LIMIT 1)`;

/**
 * `first`, after `DEDUPE_SQL`: the landing's DUPLICATE rows whose content
 * differs from the version that stays become AMENDED_DUPLICATE (a source's
 * correction, not a copy). Params as `DEDUPE_SQL`; returns one row per rename.
 */
const AMENDED_SQL = `
UPDATE straggler.bronze_events b
   SET reason = 'AMENDED_DUPLICATE',
       detail = 'an accepted record with this event id and other content (event time, group key or value) is already in bronze; the first version stays (admission.dedupe: first)'
 WHERE b.pipeline = $1 AND b.seq > $2 AND b.status = 'quarantined' AND b.reason = 'DUPLICATE'
   AND ${currentVersion("b", `NOT ${sameContent("o", "b")}`)}`;

/**
 * `latest`, step 1: an accepted row of the landing whose content is the same
 * as the version before it — the current version in bronze, or the row before
 * it in this landing — is a DUPLICATE. (Compared with the row just before, a
 * run of identical copies is caught whole: a copy's content is that of the
 * version it copies.) Params as `DEDUPE_SQL`.
 */
const LATEST_DUPLICATES_SQL = `
UPDATE straggler.bronze_events b
   SET status = 'quarantined', reason = 'DUPLICATE',
       detail = 'an accepted record with this event id and the same content is already in bronze'
 WHERE b.pipeline = $1 AND b.seq > $2 AND b.status = 'accepted'
   AND ${currentVersion("b", sameContent("o", "b"))}`;

/**
 * `latest`, step 2 (after step 1): each version of an event id the landing
 * brings again — the current one in bronze, and each but the last one of the
 * landing — is superseded by the next accepted version. Params as
 * `DEDUPE_SQL`; returns one row per supersession.
 */
const SUPERSEDE_SQL = `
INSERT INTO straggler.superseded_events (seq, pipeline, event_id, superseded_by)
SELECT v.seq, $1, v.event_id, v.next_seq
  FROM (SELECT c.seq, c.event_id, lead(c.seq) OVER (PARTITION BY c.event_id ORDER BY c.seq) AS next_seq
          FROM straggler.bronze_events c
         WHERE (${eventIdKeys("c.event_id")}, c.event_id) IN (SELECT ${eventIdKeys("n.event_id")}, n.event_id FROM straggler.bronze_events n
                               WHERE n.pipeline = $1 AND n.seq > $2 AND n.status = 'accepted')
           AND c.pipeline || '' = $1 AND c.status = 'accepted'
           AND NOT EXISTS (SELECT 1 FROM straggler.superseded_events s WHERE s.seq = c.seq)) v
 WHERE v.next_seq IS NOT NULL`;

/** Rows the dedupe reclassified or superseded, by reason. */
export interface DedupeOutcome {
  /** Landed rows turned into DUPLICATE quarantine (same content as the version before). */
  duplicates: number;
  /** `first`: landed rows quarantined AMENDED_DUPLICATE (other content; the first version stays). */
  amended: number;
  /** `latest`: accepted rows superseded by a landed row (in bronze before, or earlier in this landing). */
  superseded: number;
}

/**
 * Runs the dedupe of `mode` on this landing's rows, in the landing's transaction (under the append lock).
 * @param mode `first` or `latest` (`off` does not call it)
 * @param seqBefore bronze's seq high water read under the append lock before the landing (`bronzeSeqHighWaterText`: every row of the pipeline before is at most it)
 * @returns rows reclassified (DUPLICATE, AMENDED_DUPLICATE; both quarantined) and rows superseded
 * @throws the database's error
 */
export async function dedupeLanding(
  client: Queryable,
  pipeline: string,
  seqBefore: number,
  mode: "first" | "latest",
): Promise<DedupeOutcome> {
  const params = [pipeline, seqBefore];
  if (mode === "first") {
    const duplicates = (await client.query(prepared(DEDUPE_LANDING, DEDUPE_SQL, params))).rowCount ?? 0;
    const amended =
      duplicates === 0
        ? 0
        : ((await client.query(prepared("bronze_dedupe_amended", AMENDED_SQL, params))).rowCount ?? 0);
    return { duplicates: duplicates - amended, amended, superseded: 0 };
  }
  const duplicates =
    (await client.query(prepared("bronze_dedupe_latest", LATEST_DUPLICATES_SQL, params))).rowCount ?? 0;
  const superseded = (await client.query(prepared("bronze_supersede", SUPERSEDE_SQL, params))).rowCount ?? 0;
  return { duplicates, amended: 0, superseded };
}

/**
 * The statements `dedupeLanding` runs for `mode`, in order (params as `DEDUPE_SQL`), for a caller that
 * sends them with its next statement in one round trip (group commit) and reads the outcome from bronze's
 * reasons. Under `first`, `AMENDED_SQL` is included even when `DEDUPE_SQL` will find nothing: it then finds nothing.
 */
export function dedupeStatements(mode: "first" | "latest"): string[] {
  return mode === "first" ? [DEDUPE_SQL, AMENDED_SQL] : [LATEST_DUPLICATES_SQL, SUPERSEDE_SQL];
}
