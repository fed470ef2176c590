/**
 * The last statement of a group landing (several sources of one pipeline in
 * one transaction, src/ingest/groupCommit.ts), one round trip: reads what
 * each source wrote (its `seq` range, the rows the landing's dedupe
 * reclassified), records each source's landing (`straggler.landed_sources`)
 * with its final counts, queues the NOTIFY that wakes the stream, and reads
 * the transaction's id (what `readTxidStatus` asks about when the answer to
 * COMMIT is lost).
 */
import type { QueryResult } from "pg";
import { inlineParams } from "../../inlineParams.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import { BRONZE_CHANNEL } from "./bronzeChannel.js";

const RECORD_GROUP_LANDING = "bronze_group_landing";
/**
 * $1 pipeline, $2 bronze's seq high water before the landing (src/db/sql/ingest/bronzeSeqHighWater.ts), $3.. one array
 * element per source: name, SHA-256 of its records, rows, accepted and
 * quarantined per reason as classified (before the dedupe), request body
 * SHA-256; $9 the channel; $10 the policy version (hash) the rows were classified under. The scan of bronze
 * is the (pipeline, seq) index's range (pipeline, seq) > ($1, $2) (see dedupeLanding.ts). One row per source
 * recorded (a source recorded already is absent), or one row of nulls and
 * the txid when none was.
 */
const RECORD_GROUP_LANDING_SQL = `
WITH parts AS (
  SELECT (SELECT n.name FROM straggler.bronze_sources n WHERE n.id = g.source_id) AS source, g.first_seq, g.last_seq, g.duplicates, g.amended
    FROM (SELECT source_id, min(seq) AS first_seq, max(seq) AS last_seq,
                 count(*) FILTER (WHERE reason = 'DUPLICATE')::int AS duplicates,
                 count(*) FILTER (WHERE reason = 'AMENDED_DUPLICATE')::int AS amended
            FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2 GROUP BY source_id) g),
s AS (
  SELECT s.*, coalesce(p.duplicates, 0) AS duplicates, coalesce(p.amended, 0) AS amended, p.first_seq, p.last_seq
    FROM unnest($3::text[], $4::text[], $5::int[], $6::int[], $7::jsonb[], $8::text[]) AS s(source, sha256, rows, accepted, by_reason, request_sha256)
    LEFT JOIN parts p USING (source)),
rec AS (
  INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined, first_seq, last_seq, request_sha256, by_reason, policy_version)
  SELECT $1, source, sha256, rows, accepted - duplicates - amended, rows - (accepted - duplicates - amended), first_seq, last_seq, request_sha256,
         by_reason || jsonb_strip_nulls(jsonb_build_object(
           'DUPLICATE', nullif(coalesce((by_reason->>'DUPLICATE')::int, 0) + duplicates, 0),
           'AMENDED_DUPLICATE', nullif(coalesce((by_reason->>'AMENDED_DUPLICATE')::int, 0) + amended, 0))),
         CASE WHEN first_seq IS NULL THEN NULL ELSE $10 END
    FROM s
  ON CONFLICT DO NOTHING
  RETURNING source, rows, accepted, quarantined, first_seq, last_seq, by_reason)
SELECT rec.*, n.txid FROM (SELECT pg_notify($9, $1), txid_current()::text AS txid) n LEFT JOIN rec ON true`;

/** One source of a group landing, as classified (before the dedupe). */
export interface GroupSource {
  source: string;
  /** SHA-256 (hex) of its records, one per line. */
  sha256: string;
  rows: number;
  accepted: number;
  /** Quarantined rows per reason, as classified. */
  byReason: Record<string, number>;
  /** SHA-256 (hex) of the HTTP request body. */
  requestSha256: string | null;
}

/** A source's landing as recorded: final counts (the dedupe's DUPLICATE / AMENDED_DUPLICATE included) and `seq` range (null when it wrote no row). */
export interface RecordedSource {
  rows: number;
  accepted: number;
  quarantined: number;
  byReason: Record<string, number>;
  firstSeq: number | null;
  lastSeq: number | null;
}

/**
 * @param policyVersion the policy version (hash) the rows were classified under (the pipeline's configured one)
 * @param seqBefore bronze's seq high water read under the append lock before the landing (`bronzeSeqHighWaterText`: every row of the pipeline before is at most it)
 * @param before statements to run first in the same round trip (one simple-protocol query, parameters written
 *   in), with $1 the pipeline and $2 `seqBefore` (the landing's dedupe: `dedupeStatements`); none: one prepared statement
 * @returns the records written, by source (a source missing had a record already: nothing was written for it), and `txid_current()` as text
 * @throws the database's error
 */
export async function recordGroupLanding(
  client: Queryable,
  pipeline: string,
  policyVersion: string,
  seqBefore: number,
  sources: GroupSource[],
  before: readonly string[] = [],
): Promise<{ recorded: Map<string, RecordedSource>; txid: string }> {
  const col = <K extends keyof GroupSource>(k: K) => sources.map((s) => s[k]);
  const params = [
    pipeline,
    seqBefore,
    col("source"),
    col("sha256"),
    col("rows"),
    col("accepted"),
    sources.map((s) => JSON.stringify(s.byReason)),
    col("requestSha256"),
    BRONZE_CHANNEL,
    policyVersion,
  ];
  let rows: Record<string, unknown>[];
  if (before.length === 0)
    rows = (await client.query(prepared(RECORD_GROUP_LANDING, RECORD_GROUP_LANDING_SQL, params))).rows;
  else {
    const results = (await client.query(
      [...before, RECORD_GROUP_LANDING_SQL].map((sql) => inlineParams(sql, params)).join(";\n"),
    )) as unknown as QueryResult[];
    rows = results[results.length - 1]!.rows;
  }
  const recorded = new Map<string, RecordedSource>();
  for (const r of rows) {
    if (r.source === null) continue;
    recorded.set(r.source as string, {
      rows: r.rows as number,
      accepted: r.accepted as number,
      quarantined: r.quarantined as number,
      byReason: r.by_reason as Record<string, number>,
      firstSeq: r.first_seq as number | null,
      lastSeq: r.last_seq as number | null,
    });
  }
  return { recorded, txid: rows[0]!.txid as string };
}
