/**
 * Lands classified records in bronze, exactly once per source, through COPY.
 *
 * One transaction per source, under the pipeline's bronze-append lock taken
 * before the first row is written, so that sequence order equals commit
 * order (DESIGN §10): rows are COPYed straight into `bronze_events` while
 * they are read and classified, then the accepted rows whose event id was
 * already accepted earlier in bronze are turned into DUPLICATE quarantine
 * (one UPDATE, rarely touching any row), and the source is recorded in
 * `landed_sources`. A crash anywhere rolls the whole source back; landing it
 * again later is safe. Accepted + quarantined = landed, per source.
 *
 * The lock is held while the records are read, so they must come from a
 * source that does not stall (a file, a buffered request body, a replay
 * cursor); `landStream` spools a stream to a temporary file first.
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
import { analyzePipelineColumns } from "../db/statistics.js";

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
  /** Runs inside the landing's transaction, after the source is recorded and before COMMIT (e.g. to record the file it came from). */
  beforeCommit?: (client: PoolClient, result: LandResult) => Promise<void>;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

const COPY_SQL = `COPY straggler.bronze_events
  (pipeline, policy_version, source, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, reason, detail) FROM STDIN`;

/** One COPY text line; `prefix` holds the escaped pipeline, policy version and source, the same on every row. */
function copyLine(prefix: string, r: BronzeRow): string {
  return prefix + [r.line, r.eventId, r.raw, iso(r.eventTimeMs), iso(r.ingestionTimeMs), r.groupKey, r.value, r.status, r.reason, r.detail].map(copyText).join("\t") + "\n";
}

/**
 * Turns into DUPLICATE quarantine each accepted row of this landing (seq > $2,
 * pipeline $1) whose event id was accepted at a lower seq in this pipeline: in
 * bronze before, or earlier in this source (the statement sees the rows as
 * they were before it, so of n copies the first stays accepted). Params: $1
 * pipeline, $2 the table's highest seq before this landing. Its row count is
 * the number of duplicates.
 *
 * Written so the plan cannot depend on statistics. Bronze is usually not
 * analysed since the rows just landed, and a pipeline that is new since the
 * last ANALYZE is estimated at ~0 rows, so every index leading with
 * `pipeline` looks free — which once made the probe scan a whole pipeline per
 * row. Here `pipeline || ''` is a condition no index can use: the outer scan
 * can only be the primary-key range `seq > $2` (this landing, plus any
 * concurrent landing of another pipeline), and the probe only the event-id
 * index. The probe is a scalar subquery with LIMIT, which stays one index
 * probe per row (as EXISTS the planner may turn it into a join).
 */
export const DEDUPE_SQL = `
UPDATE straggler.bronze_events b
   SET status = 'quarantined', reason = 'DUPLICATE',
       detail = 'an accepted record with this event id is already in bronze'
 WHERE b.seq > $2 AND b.pipeline || '' = $1 AND b.status = 'accepted'
   AND (SELECT 1 FROM straggler.bronze_events o
         WHERE o.event_id = b.event_id AND o.pipeline || '' = $1 AND o.seq < b.seq AND o.status = 'accepted' LIMIT 1) IS NOT NULL`;

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
    await client.query(XACT_LOCK_SQL, [LockNamespace.bronzeAppend, p.name]);
    // Every row this landing writes gets a seq above the table's highest one now.
    const before = await client.query(prepared("bronze_max_seq", "SELECT coalesce(max(seq), 0) AS seq FROM straggler.bronze_events", []));
    const maxSeqBefore = before.rows[0].seq as number;
    const hash = createHash("sha256");
    const prefix = [p.name, policyVersion(p), source].map(copyText).join("\t") + "\t";
    const byReason: Record<string, number> = {};
    let count = 0, accepted = 0;
    const every = opts.progressEvery ?? 10_000;
    async function* encode(): AsyncGenerator<string> {
      for await (const rec of records) {
        hash.update(rec.raw).update("\n");
        count++;
        if (opts.onProgress && count % every === 0) opts.onProgress(count);
        const row = classifyRecord(rec, p, source, opts.landingTimeMs);
        if (row.status === "accepted") accepted++;
        else if (row.reason !== null) byReason[row.reason] = (byReason[row.reason] ?? 0) + 1;
        yield copyLine(prefix, row);
      }
    }
    await pipe(Readable.from(inChunks(encode())), client.query(copyFrom(COPY_SQL)));
    const sha256 = hash.digest("hex");
    if (p.admission.dedupe && accepted > 0) {
      const dups = (await client.query(prepared("bronze_dedupe", DEDUPE_SQL, [p.name, maxSeqBefore]))).rowCount ?? 0;
      if (dups > 0) {
        accepted -= dups;
        byReason.DUPLICATE = (byReason.DUPLICATE ?? 0) + dups;
      }
    }
    const range = await client.query(
      prepared("bronze_landed_range", "SELECT min(seq) AS first_seq, max(seq) AS last_seq FROM straggler.bronze_events WHERE seq > $2 AND pipeline || '' = $1", [p.name, maxSeqBefore]),
    );
    const result: LandResult = {
      pipeline: p.name, source, alreadyLanded: false, landed: count, accepted, quarantined: count - accepted, byReason,
      firstSeq: range.rows[0].first_seq as number | null, lastSeq: range.rows[0].last_seq as number | null,
    };
    const recorded = await client.query(
      `INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined, first_seq, last_seq)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
      [p.name, source, sha256, result.landed, result.accepted, result.quarantined, result.firstSeq, result.lastSeq],
    );
    if (recorded.rowCount === 0) {
      // Another process landed the same source meanwhile: ours must not land twice.
      await client.query("ROLLBACK");
      return empty;
    }
    await opts.beforeCommit?.(client, result);
    if (count >= p.trigger.maxRowsPerBatch) {
      // A landing larger than one micro-batch refreshes bronze's statistics before the
      // stream sees it. Without them, a pipeline new since the last ANALYZE is estimated
      // at ~0 rows and every index leading with pipeline looks free: micro-batches then
      // scan the whole pipeline. The other columns follow in analyzeIfStale.
      await analyzePipelineColumns(client);
    }
    await client.query("SELECT pg_notify($1, $2)", [BRONZE_CHANNEL, p.name]);
    await client.query("COMMIT");
    opts.onProgress?.(count);
    return result;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}
