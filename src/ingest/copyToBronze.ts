/**
 * Lands classified records in bronze, exactly once per source, through COPY.
 *
 * One transaction per source: rows are COPYed into a temporary stage while
 * they stream in, then — under the pipeline's bronze-append lock, so that
 * sequence order equals commit order (DESIGN §10) — moved into
 * `bronze_events` with duplicates classified, and the source recorded in
 * `landed_sources`. A crash anywhere rolls the whole source back; landing it
 * again later is safe. Accepted + quarantined = landed, per source.
 */
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import { copyText, inChunks } from "../db/copyText.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { policyVersion } from "../config/pipelines.js";
import { classifyRecord, type BronzeRow, type RawRecord } from "../core/admission.js";
import { LockNamespace, XACT_LOCK_SQL } from "../db/locks.js";
import type { Pool, PoolClient } from "../db/pool.js";
import { prepared } from "../db/prepared.js";

/** Channel notified (payload: pipeline name) when rows land, to wake the stream. */
export const BRONZE_CHANNEL = "straggler_bronze";

export interface LandResult {
  pipeline: string;
  source: string;
  /** True when the source had landed before: nothing was written. */
  alreadyLanded: boolean;
  landed: number;
  accepted: number;
  quarantined: number;
  byReason: Record<string, number>;
  firstSeq: number | null;
  lastSeq: number | null;
}

export interface LandOptions {
  /** Ingestion time for records that carry none, epoch ms (set once per source). */
  landingTimeMs: number;
  /** Called every `progressEvery` records with the count so far. */
  onProgress?: (records: number) => void;
  progressEvery?: number;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function copyLine(r: BronzeRow): string {
  return [r.line, r.eventId, r.raw, iso(r.eventTimeMs), iso(r.ingestionTimeMs), r.groupKey, r.value, r.status, r.reason, r.detail].map(copyText).join("\t") + "\n";
}

// Kept per session (pooled connections reuse it) and emptied at every commit:
// creating a temp table per transaction costs catalog writes on every landing.
const STAGE_DDL = `CREATE TEMP TABLE IF NOT EXISTS bronze_stage (
  line integer, event_id text, raw text, event_time timestamptz, ingestion_time timestamptz,
  group_key text, value numeric, status text, reason text, detail text) ON COMMIT DELETE ROWS`;

/**
 * Moves the stage into bronze. A stage row is a DUPLICATE when dedupe is on
 * and an accepted row with its event id is already in bronze or earlier in
 * this stage. Params: $1 pipeline, $2 source, $3 policy version, $4 dedupe.
 */
const MOVE_SQL = `
WITH staged AS (
  SELECT s.*,
         s.status = 'accepted' AND $4::boolean AND (
           row_number() OVER (PARTITION BY s.event_id, s.status = 'accepted' ORDER BY s.line) > 1
           -- A scalar subquery with LIMIT stays a per-row index probe; as EXISTS the planner
           -- may hash-join the (unanalysed) stage against all of the pipeline's bronze.
           OR (SELECT 1 FROM straggler.bronze_events b
                WHERE b.pipeline = $1 AND b.event_id = s.event_id AND b.status = 'accepted' LIMIT 1) IS NOT NULL
         ) AS is_duplicate
    FROM bronze_stage s
), inserted AS (
  INSERT INTO straggler.bronze_events
    (pipeline, event_id, raw, event_time, ingestion_time, group_key, value, status, reason, detail, policy_version, source, source_line)
  SELECT $1, event_id, raw, event_time, ingestion_time, group_key, value,
         CASE WHEN is_duplicate THEN 'quarantined' ELSE status END,
         CASE WHEN is_duplicate THEN 'DUPLICATE' ELSE reason END,
         CASE WHEN is_duplicate THEN 'an accepted record with this event id is already in bronze' ELSE detail END,
         $3, $2, line
    FROM staged ORDER BY line
  RETURNING seq, status, reason
)
SELECT min(seq) AS first_seq, max(seq) AS last_seq, count(*)::int AS landed,
       count(*) FILTER (WHERE status = 'accepted')::int AS accepted,
       coalesce(jsonb_object_agg(reason, n) FILTER (WHERE reason IS NOT NULL), '{}') AS by_reason
  FROM (SELECT seq, status, reason, count(*) OVER (PARTITION BY reason) AS n FROM inserted) i`;

async function alreadyLanded(client: PoolClient, pipeline: string, source: string): Promise<boolean> {
  const { rowCount } = await client.query("SELECT 1 FROM straggler.landed_sources WHERE pipeline = $1 AND source = $2", [pipeline, source]);
  return (rowCount ?? 0) > 0;
}

/**
 * Lands one source's records in bronze.
 * @param source stable name of the source (file path relative to the landing folder, `replay:…`, …)
 * @returns counts per outcome; `alreadyLanded` when the source had landed before
 * @throws database errors (the transaction is rolled back, nothing is written)
 */
export async function landRecords(pool: Pool, p: PipelineConfig, source: string, records: AsyncIterable<RawRecord>, opts: LandOptions): Promise<LandResult> {
  const empty: LandResult = { pipeline: p.name, source, alreadyLanded: true, landed: 0, accepted: 0, quarantined: 0, byReason: {}, firstSeq: null, lastSeq: null };
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    if (await alreadyLanded(client, p.name, source)) {
      await client.query("ROLLBACK");
      return empty;
    }
    await client.query(STAGE_DDL);
    const hash = createHash("sha256");
    let count = 0;
    const every = opts.progressEvery ?? 10_000;
    async function* encode(): AsyncGenerator<string> {
      for await (const rec of records) {
        hash.update(rec.raw).update("\n");
        count++;
        if (opts.onProgress && count % every === 0) opts.onProgress(count);
        yield copyLine(classifyRecord(rec, p, source, opts.landingTimeMs));
      }
    }
    await pipe(Readable.from(inChunks(encode())), client.query(copyFrom("COPY bronze_stage FROM STDIN")));
    const sha256 = hash.digest("hex");
    const key = source;
    await client.query(XACT_LOCK_SQL, [LockNamespace.bronzeAppend, p.name]);
    const moved = await client.query(prepared("move_stage", MOVE_SQL, [p.name, key, policyVersion(p), p.admission.dedupe]));
    const m = moved.rows[0] as { first_seq: number | null; last_seq: number | null; landed: number; accepted: number; by_reason: Record<string, number> };
    const recorded = await client.query(
      `INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined, first_seq, last_seq)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
      [p.name, key, sha256, m.landed, m.accepted, m.landed - m.accepted, m.first_seq, m.last_seq],
    );
    if (recorded.rowCount === 0) {
      // Another process landed the same source meanwhile: ours must not land twice.
      await client.query("ROLLBACK");
      return { ...empty, source: key };
    }
    await client.query("SELECT pg_notify($1, $2)", [BRONZE_CHANNEL, p.name]);
    await client.query("COMMIT");
    opts.onProgress?.(count);
    return {
      pipeline: p.name,
      source: key,
      alreadyLanded: false,
      landed: m.landed,
      accepted: m.accepted,
      quarantined: m.landed - m.accepted,
      byReason: m.by_reason,
      firstSeq: m.first_seq,
      lastSeq: m.last_seq,
    };
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}
