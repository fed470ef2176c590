/**
 * Lands classified records in bronze, exactly once per source, through COPY.
 *
 * One transaction per source, under the pipeline's bronze-append lock taken
 * before the first row is written, so that sequence order equals commit
 * order (DESIGN §10): rows are COPYed straight into `bronze_events` while
 * they are read and classified, then the accepted rows whose event id was
 * already accepted earlier in bronze are deduped by `admission.dedupe`
 * (DUPLICATE, AMENDED_DUPLICATE, or a supersession under `latest`:
 * src/db/sql/ingest/dedupeLanding.ts; rarely touching any row), and the source is recorded in
 * `landed_sources`. A crash anywhere rolls the whole source back; landing it
 * again later is safe. Accepted + quarantined = landed, per source.
 *
 * The transaction opens in one exchange with the server, as a group
 * commit's (groupCommit.ts): BEGIN, the lock, bronze's seq high water and
 * the source's record (and, for records classified in memory, the probe of
 * their event ids) in one simple-protocol query. When the dedupe runs, the
 * statements after the COPY stay prepared ones of their own: sent as one
 * query with their values written in, the landing was slower, not faster
 * (the dedupe with a literal `seq > N` read the whole partial event-id
 * index: 11 ms for 82 rows; the group's record statement, which counts the
 * dedupe's rows, took 13 ms). When it does not, the range (the (pipeline, seq) index's
 * two ends), the record, the header and the NOTIFY go in one exchange
 * (src/db/sql/ingest/recordLanding.ts).
 *
 * The lock is held while the records are read, so they must come from a
 * source that does not stall (a file, a spooled request body, a replay
 * cursor); `landStream` spools a stream to a temporary file first. Waiting
 * for the lock holds no connection (`appendLock.ts`).
 *
 * What a landing is asked and answers, and the answer of a source that landed before, are
 * src/ingest/landAnswer.ts's.
 */
import { policyVersion, type PipelineConfig } from "../config/pipelines.js";
import { dedupeModeOf, type RawRecord } from "../core/admission.js";
import { rollback, type Pool, type PoolClient } from "../db/pool.js";
import { notifyLanded } from "../db/sql/ingest/bronzeChannel.js";
import { copyBronzeRows } from "../db/sql/ingest/copyBronzeRows.js";
import { dedupeLanding } from "../db/sql/ingest/dedupeLanding.js";
import { eventIdFound, probeEventIdsText } from "../db/sql/ingest/probeEventIds.js";
import { COMMIT_WITHOUT_FLUSH_WAIT_SQL } from "../db/sql/ingest/commitWithoutFlushWait.js";
import { bronzeSeqHighWaterText, seqOf } from "../db/sql/ingest/bronzeSeqHighWater.js";
import { bronzeSourceIdsFrom, bronzeSourceIdsText, sourceIdFor } from "../db/sql/ingest/bronzeSourceIds.js";
import { readLandedRange } from "../db/sql/ingest/readLandedRange.js";
import { landedSourcesFrom, readLandedSourcesText } from "../db/sql/ingest/readLandedSources.js";
import { recordLandedSource } from "../db/sql/ingest/recordLandedSource.js";
import { recordLanding } from "../db/sql/ingest/recordLanding.js";
import { recordSourceHeader } from "../db/sql/ingest/sourceHeaders.js";
import { analyzePipelineColumns } from "../db/sql/observe/plannerStatistics.js";
import { inAppendQueue, withAppendLockReading } from "./appendLock.js";
import { classifyLines, idsToProbe, quarantinedIdsOf, type ClassifiedLines } from "./classifyLines.js";
import { commitOutcome } from "./commitOutcome.js";
import { answerFromRecord, landedBefore, type LandOptions, type LandResult } from "./landAnswer.js";

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
 *
 * `records` may come classified already (`classifyInMemory`: a replay's span, classified while the
 * previous span lands): the transaction then only writes the lines, and when every record was
 * classified in memory it probes the accepted event ids before its COPY and skips the dedupe where no
 * id can be a duplicate (src/db/sql/ingest/probeEventIds.ts). Their classification's `elideRaw` must
 * answer as `opts.csvHeader` does.
 * @param source stable name of the source (file path relative to the landing folder, `replay:…`, `http:<key or uuid>`, …); recorded before COMMIT is sent
 * @returns counts per outcome and the bronze sequence range; `alreadyLanded` with the recorded counts when the source had landed before
 * @throws SourceConflictError when `opts.requestSha256` differs from the one recorded for an earlier landing of `source`
 * @throws CommitOutcomeUnknownError when the connection dropped after COMMIT and the database could not be asked within 10 s
 * @throws database errors (the transaction is rolled back, nothing is written)
 */
export async function landRecords(
  pool: Pool,
  pipeline: PipelineConfig,
  source: string,
  records: AsyncIterable<RawRecord> | ClassifiedLines,
  opts: LandOptions,
): Promise<LandResult> {
  const earlier = opts.newSource ? undefined : await landedBefore(pool, pipeline.name, source, opts.requestSha256);
  const probe = idsToProbe(pipeline, records);
  const result =
    earlier ??
    (await inAppendQueue(pool, pipeline.name, () => landLocked(pool, pipeline, source, records, probe, opts)));
  // The replay's own ids learn the landing's outcome (landedIds.ts): its ids, or that bronze may hold others.
  if (result.alreadyLanded) opts.landedIds?.giveUp(result.lastSeq);
  else opts.landedIds?.landed(probe, quarantinedIdsOf(records), result.lastSeq);
  return result;
}

/** What the landing's transaction ends with besides a result: the source was recorded meanwhile by a writer that did not take the append lock (or its record holds another landing's ingestion time: sourceIdFor). */
const RECORDED_MEANWHILE = Symbol("recorded meanwhile");
async function landLocked(
  pool: Pool,
  pipeline: PipelineConfig,
  source: string,
  records: AsyncIterable<RawRecord> | ClassifiedLines,
  probe: string[] | null,
  opts: LandOptions,
): Promise<LandResult> {
  // Set by the transaction's last statement: from then on, only COMMIT can fail.
  let committing: { txid: string; backendPid: number | undefined; result: LandResult } | undefined;
  let outcome: LandResult | typeof RECORDED_MEANWHILE;
  try {
    // One exchange opens the transaction: BEGIN, the lock, (the flush setting,) bronze's seq high water (and a replay's
    // pipeline's highest seq), the source's id (made if new), its record unless the source is new, and the probe of the
    // landing's event ids when it can tell (`idsToProbe`), skipped when the replay's own ids (landedIds.ts) tell.
    const skipProbe = probe !== null && probe.length > 0 && opts.landedIds?.mayBeNew(probe) === true;
    const floor = opts.landedIds || opts.onRowsAsClassified ? (opts.landedIds?.floor() ?? 0) : undefined;
    const reads = [
      ...(opts.commitWithoutFlushWait ? [COMMIT_WITHOUT_FLUSH_WAIT_SQL] : []),
      bronzeSeqHighWaterText(floor === undefined ? undefined : { pipeline: pipeline.name, floor }),
      bronzeSourceIdsText(pipeline.name, [{ name: source, landingTimeMs: opts.landingTimeMs }]),
      ...(opts.newSource ? [] : [readLandedSourcesText(pipeline.name, [source])]),
      ...(probe !== null && probe.length > 0 && !skipProbe ? [probeEventIdsText(pipeline.name, probe)] : []),
    ];
    outcome = await withAppendLockReading<LandResult | typeof RECORDED_MEANWHILE>(
      pool,
      pipeline.name,
      reads.join("; "),
      async (client, answers) => {
        const read = opts.commitWithoutFlushWait ? answers.slice(1) : answers;
        const [highWater, ids] = read;
        const sources = opts.newSource ? undefined : read[2];
        const [seqBefore, top] = [seqOf(highWater!.rows), Number(highWater!.rows[0].top)];
        // Every landing of a replay that knows its ids tells it where the pipeline stands (another writer gives it up).
        const trusted = opts.landedIds?.confirms(top) === true;
        // The dedupe may change a row unless the probe (or the replay's own ids) told none can (no id to probe: none can).
        const mayRepeat =
          probe === null
            ? true
            : probe.length > 0 && (skipProbe ? !trusted : eventIdFound(read[read.length - 1]!.rows));
        // Under the lock: a landing of the same source by another process has committed or never will.
        const r = opts.newSource ? undefined : landedSourcesFrom(sources!.rows).get(source);
        if (r !== undefined) return rollback(answerFromRecord(pipeline.name, source, r, opts.requestSha256));
        const sourceId = sourceIdFor(bronzeSourceIdsFrom(ids!.rows), source, opts.landingTimeMs);
        if (sourceId === null) return rollback(RECORDED_MEANWHILE); // a landing of it committed first (sourceIdFor)
        const { result, sha256, rawLayout, deduped } = await copyRecords(
          client,
          pipeline,
          source,
          sourceId,
          records,
          seqBefore,
          mayRepeat,
          opts,
        );
        const header = opts.csvHeader?.();
        // Rows written without their raw text are read back by the header's layout: never one without the other.
        if (header === undefined && rawLayout !== null)
          throw new Error(`${source}: rows were written without their raw text but no CSV header was recorded`);
        if (!deduped && opts.beforeCommit === undefined && result.landed < pipeline.trigger.maxRowsPerBatch) {
          // No row changed since the COPY: the range, the source's record, its header and the NOTIFY in one exchange.
          const r = await recordLanding(
            client,
            {
              pipeline: pipeline.name,
              source,
              sha256,
              rows: result.landed,
              accepted: result.accepted,
              quarantined: result.quarantined,
              requestSha256: opts.requestSha256 ?? null,
              byReason: result.byReason,
              policyVersion: policyVersion(pipeline),
            },
            seqBefore,
            header === undefined ? undefined : { text: header, rawLayout },
          );
          if (!r.recorded) return rollback(RECORDED_MEANWHILE);
          const landed = { ...result, firstSeq: r.firstSeq, lastSeq: r.lastSeq };
          if (r.firstSeq !== null && r.lastSeq !== null)
            opts.onRowsAsClassified?.({ seqBefore: top, firstSeq: r.firstSeq, lastSeq: r.lastSeq });
          committing = {
            txid: r.txid,
            backendPid: (client as unknown as { processID?: number }).processID,
            result: landed,
          };
          return landed;
        }
        Object.assign(result, await readLandedRange(client, pipeline.name, seqBefore));
        // The source record goes in before COMMIT is sent: if the answer to COMMIT is lost, it is what tells.
        const recorded = await recordLandedSource(client, {
          pipeline: pipeline.name,
          source,
          sha256,
          rows: result.landed,
          accepted: result.accepted,
          quarantined: result.quarantined,
          firstSeq: result.firstSeq,
          lastSeq: result.lastSeq,
          requestSha256: opts.requestSha256 ?? null,
          byReason: result.byReason,
          policyVersion: policyVersion(pipeline),
        });
        // Recorded meanwhile by a writer that did not take the append lock: ours must not land twice.
        if (!recorded) return rollback(RECORDED_MEANWHILE);
        if (header !== undefined) await recordSourceHeader(client, pipeline.name, source, header, rawLayout);
        await opts.beforeCommit?.(client, result);
        if (result.landed >= pipeline.trigger.maxRowsPerBatch) {
          // A landing larger than one micro-batch refreshes bronze's statistics before the
          // stream sees it. Without them, a pipeline new since the last ANALYZE is estimated
          // at ~0 rows and every index leading with pipeline looks free: micro-batches then
          // scan the whole pipeline. The other columns follow in analyzeIfStale.
          await analyzePipelineColumns(client);
        }
        const txid = await notifyLanded(client, pipeline.name);
        committing = { txid, backendPid: (client as unknown as { processID?: number }).processID, result };
        return result;
      },
    );
  } catch (e) {
    if (committing === undefined) throw e;
    // COMMIT was sent and no answer came: find out on another connection.
    const { txid, backendPid, result } = committing;
    const status = await commitOutcome(pool, txid, backendPid, source);
    if (status === "aborted") throw e;
    if (status === "unknown") {
      // txid_status cannot tell: the source record, written in the same transaction, can.
      const recorded = await landedBefore(pool, pipeline.name, source, undefined);
      if (!recorded) throw e;
    }
    opts.onProgress?.(result.landed);
    return result;
  }
  if (outcome === RECORDED_MEANWHILE) {
    const other = await landedBefore(pool, pipeline.name, source, opts.requestSha256);
    if (other) return other;
    throw new Error(`${source}: recorded by another landing that then disappeared`);
  }
  if (!outcome.alreadyLanded) opts.onProgress?.(outcome.landed);
  return outcome;
}

/**
 * COPYs `records`, classified (as they are read, or before: `classifyInMemory`), into bronze on `client`
 * (under the append lock, `seqBefore` bronze's seq high water read under it), dedupes the landing's
 * repeated event ids by the pipeline's `admission.dedupe` mode; the caller reads the `seq` range written.
 * A landing classified whole in memory whose accepted event ids are all new to the pipeline and none
 * twice in it skips the dedupe: it would change no row.
 * @returns the landing's result (counts; the `seq` range null), the SHA-256
 *   (hex) of its records, one per line, the raw layout, and whether the dedupe ran (it may have changed rows)
 */
async function copyRecords(
  client: PoolClient,
  pipeline: PipelineConfig,
  source: string,
  sourceId: number,
  records: AsyncIterable<RawRecord> | ClassifiedLines,
  seqBefore: number,
  mayRepeat: boolean,
  opts: LandOptions,
): Promise<{ result: LandResult; sha256: string; rawLayout: string | null; deduped: boolean }> {
  const dedupe = dedupeModeOf(pipeline.admission.dedupe);
  let lines: AsyncIterable<string> | null,
    tally: ClassifiedLines["tally"],
    inMemory: readonly string[] = [];
  if ("tally" in records) {
    ({ tally } = records);
    inMemory = records.lines;
    lines = records.rest;
  } else {
    // A row may be written without its raw text only where its source's CSV header (and with it the layout) is recorded.
    ({ lines, tally } = classifyLines(pipeline, source, records, {
      ...opts,
      elideRaw: () => opts.csvHeader?.() !== undefined,
    }));
  }
  await copyBronzeRows(client, sourceId, lines, inMemory);
  const byReason = tally.byReason;
  const count = tally.landed;
  let accepted = tally.accepted;
  const deduped = dedupe !== "off" && accepted > 0 && mayRepeat;
  if (deduped) {
    const d = await dedupeLanding(client, pipeline.name, seqBefore, dedupe);
    accepted -= d.duplicates + d.amended;
    if (d.duplicates > 0) byReason.DUPLICATE = (byReason.DUPLICATE ?? 0) + d.duplicates;
    if (d.amended > 0) byReason.AMENDED_DUPLICATE = (byReason.AMENDED_DUPLICATE ?? 0) + d.amended;
  }
  return {
    result: {
      pipeline: pipeline.name,
      source,
      alreadyLanded: false,
      landed: count,
      accepted,
      quarantined: count - accepted,
      byReason,
      firstSeq: null,
      lastSeq: null,
    },
    sha256: tally.hash.digest("hex"),
    rawLayout: tally.rawLayout,
    deduped,
  };
}
