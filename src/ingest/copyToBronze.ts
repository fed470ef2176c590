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
 * source that does not stall (a file, a spooled request body, a replay
 * cursor); `landStream` spools a stream to a temporary file first. Waiting
 * for the lock holds no connection (`appendLock.ts`).
 */
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import { copyText, inChunks } from "../db/copyText.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { policyVersion } from "../config/pipelines.js";
import { classifyRecord, type BronzeRow, type RawRecord } from "../core/admission.js";
import { formatInstant } from "../core/timestamps.js";
import type { Pool, PoolClient } from "../db/pool.js";
import { prepared } from "../db/prepared.js";
import { analyzePipelineColumns } from "../db/statistics.js";
import { acquireAppendLock, inAppendQueue } from "./appendLock.js";
import { commitOutcome } from "./commitOutcome.js";

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

/** Longest stretch a landing classifies records without letting the event loop run, ms. */
const YIELD_EVERY_MS = 10;

export interface LandOptions {
  /** Ingestion time for records that carry none, epoch ms (set once per source). */
  landingTimeMs: number;
  /** Called every `progressEvery` records with the count so far. */
  onProgress?: (records: number) => void;
  progressEvery?: number;
  /** Runs inside the landing's transaction, after the source is recorded and before COMMIT (e.g. to record the file it came from). */
  beforeCommit?: (client: PoolClient, result: LandResult) => Promise<void>;
  /**
   * SHA-256 (hex) of the request body the records come from (HTTP). Recorded
   * with the source; a later landing of the same source with another hash is
   * refused (`SourceConflictError`).
   */
  requestSha256?: string;
  /** The source key was made up for this landing (`http:<uuid>`, `stdin:<uuid>`): no earlier landing to look up. */
  newSource?: boolean;
}

function iso(us: bigint | null): string | null {
  return us === null ? null : formatInstant(us);
}

const COPY_SQL = `COPY straggler.bronze_events
  (pipeline, policy_version, source, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, reason, detail) FROM STDIN`;

/** One COPY text line; `prefix` holds the escaped pipeline, policy version and source, the same on every row. */
function copyLine(prefix: string, r: BronzeRow): string {
  return prefix + [r.line, r.eventId, r.raw, iso(r.eventTimeUs), iso(r.ingestionTimeUs), r.groupKey, r.value, r.status, r.reason, r.detail].map(copyText).join("\t") + "\n";
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

/** A source key used again for a different request body (HTTP `Idempotency-Key`): nothing was landed. */
export class SourceConflictError extends Error {
  override name = "SourceConflictError";
  constructor(readonly source: string) {
    super(`${source} has already landed with a different request body; nothing was landed`);
  }
}

/**
 * The landing recorded for `source`, answered as it was first answered
 * (`alreadyLanded: true`), or undefined when the source has not landed.
 * @throws SourceConflictError when `requestSha256` is given and differs from the recorded one
 */
async function landedBefore(db: Pool | PoolClient, pipeline: string, source: string, requestSha256: string | undefined): Promise<LandResult | undefined> {
  const { rows } = await db.query(
    "SELECT rows, accepted, quarantined, first_seq, last_seq, by_reason, request_sha256 FROM straggler.landed_sources WHERE pipeline = $1 AND source = $2",
    [pipeline, source],
  );
  const r = rows[0];
  if (r === undefined) return undefined;
  // A landing recorded before request hashes were kept (request_sha256 null) cannot be compared: it answers as a retry.
  if (requestSha256 !== undefined && r.request_sha256 !== null && r.request_sha256 !== requestSha256) throw new SourceConflictError(source);
  return {
    pipeline, source, alreadyLanded: true, landed: r.rows, accepted: r.accepted, quarantined: r.quarantined, byReason: r.by_reason ?? {},
    firstSeq: r.first_seq, lastSeq: r.last_seq,
  };
}

/**
 * Lands one source's records in bronze.
 *
 * A source that has landed before is answered from its record, without
 * waiting for the append lock and without reading `records`. Otherwise the
 * landing waits its turn without holding a connection (`appendLock.ts`),
 * then runs in one transaction. When the connection drops after COMMIT was
 * sent, the outcome is looked up on another connection (`commitOutcome.ts`)
 * and the truth returned: the result if it committed, the connection error
 * if it did not.
 * @param source stable name of the source (file path relative to the landing folder, `replay:…`, `http:<key or uuid>`, …); recorded before COMMIT is sent
 * @returns counts per outcome and the bronze sequence range; `alreadyLanded` with the recorded counts when the source had landed before
 * @throws SourceConflictError when `opts.requestSha256` differs from the one recorded for an earlier landing of `source`
 * @throws CommitOutcomeUnknownError when the connection dropped after COMMIT and the database could not be asked within 10 s
 * @throws database errors (the transaction is rolled back, nothing is written)
 */
export async function landRecords(pool: Pool, p: PipelineConfig, source: string, records: AsyncIterable<RawRecord>, opts: LandOptions): Promise<LandResult> {
  const earlier = opts.newSource ? undefined : await landedBefore(pool, p.name, source, opts.requestSha256);
  if (earlier) return earlier;
  return inAppendQueue(pool, p.name, () => landLocked(pool, p, source, records, opts));
}

async function landLocked(pool: Pool, p: PipelineConfig, source: string, records: AsyncIterable<RawRecord>, opts: LandOptions): Promise<LandResult> {
  const client = await acquireAppendLock(pool, p.name);
  let txid: string | undefined;
  let result: LandResult | undefined;
  let released = false;
  try {
    // Under the lock: a landing of the same source by another process has committed or never will.
    const earlier = opts.newSource ? undefined : await landedBefore(client, p.name, source, opts.requestSha256);
    if (earlier) {
      await client.query("ROLLBACK");
      return earlier;
    }
    // Every row this landing writes gets a seq above the table's highest one now.
    const before = await client.query(prepared("bronze_max_seq", "SELECT coalesce(max(seq), 0) AS seq FROM straggler.bronze_events", []));
    const maxSeqBefore = before.rows[0].seq as number;
    const hash = createHash("sha256");
    const prefix = [p.name, policyVersion(p), source].map(copyText).join("\t") + "\t";
    const byReason: Record<string, number> = {};
    let count = 0, accepted = 0;
    const every = opts.progressEvery ?? 10_000;
    let lastYield = performance.now();
    async function* encode(): AsyncGenerator<string> {
      for await (const rec of records) {
        // Records already buffered are read in microtasks, which never let the event loop run:
        // give it a turn every ~10 ms, so the process keeps answering while a large source lands.
        if ((count & 255) === 0 && performance.now() - lastYield >= YIELD_EVERY_MS) {
          await new Promise((r) => setImmediate(r));
          lastYield = performance.now();
        }
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
    result = {
      pipeline: p.name, source, alreadyLanded: false, landed: count, accepted, quarantined: count - accepted, byReason,
      firstSeq: range.rows[0].first_seq as number | null, lastSeq: range.rows[0].last_seq as number | null,
    };
    // The source record goes in before COMMIT is sent: if the answer to COMMIT is lost, it is what tells.
    const recorded = await client.query(
      `INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined, first_seq, last_seq, request_sha256, by_reason)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
      [p.name, source, sha256, result.landed, result.accepted, result.quarantined, result.firstSeq, result.lastSeq, opts.requestSha256 ?? null, JSON.stringify(byReason)],
    );
    if (recorded.rowCount === 0) {
      // Recorded meanwhile by a writer that did not take the append lock: ours must not land twice.
      await client.query("ROLLBACK");
      result = undefined;
      const other = await landedBefore(pool, p.name, source, opts.requestSha256);
      if (other) return other;
      throw new Error(`${source}: recorded by another landing that then disappeared`);
    }
    await opts.beforeCommit?.(client, result);
    if (count >= p.trigger.maxRowsPerBatch) {
      // A landing larger than one micro-batch refreshes bronze's statistics before the
      // stream sees it. Without them, a pipeline new since the last ANALYZE is estimated
      // at ~0 rows and every index leading with pipeline looks free: micro-batches then
      // scan the whole pipeline. The other columns follow in analyzeIfStale.
      await analyzePipelineColumns(client);
    }
    txid = (await client.query("SELECT pg_notify($1, $2), txid_current()::text AS txid", [BRONZE_CHANNEL, p.name])).rows[0].txid as string;
    await client.query("COMMIT");
    opts.onProgress?.(count);
    return result;
  } catch (e) {
    if (txid === undefined || result === undefined) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw e;
    }
    // COMMIT was sent and no answer came: find out on another connection.
    client.release(e as Error);
    released = true;
    const outcome = await commitOutcome(pool, txid, (client as unknown as { processID?: number }).processID, source);
    if (outcome === "aborted") throw e;
    if (outcome === "unknown") {
      // txid_status cannot tell: the source record, written in the same transaction, can.
      const recorded = await landedBefore(pool, p.name, source, undefined);
      if (!recorded) throw e;
    }
    opts.onProgress?.(result.landed);
    return result;
  } finally {
    if (!released) client.release();
  }
}
