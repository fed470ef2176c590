/**
 * Rebuild (README "Incidents: hold, rebuild, cut over"; issue 13 item 2): a
 * new results version of a pipeline from its whole ledger under the
 * configured policy, built beside the live version, which keeps serving.
 *
 *   1. A `candidate` version is recorded (`straggler.policy_versions`) with a
 *      rebuild run over the ledger up to its highest seq at the start.
 *   2. Every row is classified again from its raw text and original
 *      ingestion time (src/lifecycle/rebuildClassify.ts), in pages by seq
 *      (bounded memory); each page, its dedupe and the progress commit in one
 *      transaction, so a killed rebuild continues where it stopped.
 *   3. At the end, in one transaction under the results lock: the windows as
 *      the batch oracle computes them from the candidate's accepted rows, its
 *      checkpoint (offset = the ledger's seq at the start, watermark = latest
 *      accepted event time − the policy's delay; windows ending at or before
 *      it final), its lateness histogram over the recorded batches (when the
 *      pipeline keeps one: docs/lateness.md), a reconcile of the candidate, the diff against the live
 *      version, and the mark `complete`.
 *
 * Each classified row is marked where it differs from bronze's (the live
 * classification; drizzle/0037): a cutover rewrites only those rows. Every
 * cutover marks the stored versions' rows again (src/db/sql/lifecycle/
 * versionSwap.ts); a rebuild during which one went live marks its rows again
 * at the end (O(ledger), as the rebuild itself). Only a complete candidate can be cut
 *      over (src/lifecycle/cutover.ts).
 *
 * The classification of a range of bronze rows and a version's watermark are
 * src/lifecycle/classifyRange.ts's (the cutover's catch-up uses them too).
 */
import { canonicalPolicy, policyHash, policyOf, type PolicyDocument } from "../config/policy.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../db/pool.js";
import { markClassifications } from "../db/sql/stream/classifications.js";
import { lockResults } from "../db/sql/stream/lockResults.js";
import { readLivePolicy } from "../db/sql/stream/policyVersions.js";
import { readResultsFootprint } from "../db/sql/observe/resultsFootprint.js";
import { readCheckpoint } from "../db/sql/stream/readCheckpoint.js";
import {
  readRebuildDiff,
  writeRebuildDiff,
  type ChangedRow,
  type WindowChange,
} from "../db/sql/lifecycle/rebuildDiff.js";
import {
  completeRebuild,
  createCandidate,
  deleteVersion,
  readPipelineMaxSeq,
  readRebuild,
  readRunningRebuild,
  releaseRebuildLock,
  saveRebuildProgress,
  saveVersionCheckpoint,
  tryRebuildLock,
  wentLiveSince,
  type RebuildRun,
  type VersionCheckpoint,
} from "../db/sql/lifecycle/rebuildRuns.js";
import {
  compareVersionWindows,
  computeVersionWindows,
  versionMaxEventTime,
  type VersionMismatch,
} from "../db/sql/lifecycle/versionWindows.js";
import { countBronzeBetween, lockVersion, readCandidateLedger } from "../db/sql/lifecycle/versionLedger.js";
import { countVersionHistogram, dropVersionHistogram, NOTHING_COUNTED } from "../db/sql/lateness/histogramVersions.js";
import { windowSpecOf } from "../core/pipelineSpec.js";
import { guardTimeZone, HorizonRefusedError, refuseArchived } from "../guards/index.js";
import { classifyRange, REBUILD_PAGE_ROWS, versionWatermark } from "./classifyRange.js";

/** A rebuild that cannot run: another one is running, or the policy changes what a rebuild keeps. Nothing was changed. */
export class RebuildRefusedError extends Error {
  override name = "RebuildRefusedError";
}

export interface RebuildOptions {
  /** Rows per page (default 10 000). */
  pageRows?: number;
  /** Start over even when a killed rebuild of the same policy could continue. */
  restart?: boolean;
  /** Called once the candidate is known, with the rows left to classify. */
  onStart?: (info: { version: number; resumed: boolean; rows: number }) => void;
  /** Called after each page with the rows classified so far in this call. */
  onProgress?: (rows: number) => void;
}

/** A candidate's reconcile: its windows against a recompute from its classification, and its ledger. */
interface CandidateReconcile {
  ok: boolean;
  windowsChecked: number;
  mismatches: VersionMismatch[];
  ledger: { landed: number; accepted: number; quarantined: number; balanced: boolean };
}

/** What a rebuild answers (CLI, REST). Instants ISO 8601 UTC. */
export interface RebuildReport {
  pipeline: string;
  version: number;
  policyVersion: string;
  /** The live version it was compared with; null when the pipeline has none yet. */
  liveVersion: number | null;
  /** True when it continued a killed rebuild. */
  resumed: boolean;
  /** Rows classified in this call. */
  rowsClassified: number;
  checkpoint: VersionCheckpoint;
  windows: number;
  reconcile: CandidateReconcile;
  diff: {
    windows: WindowChange[];
    reclassified: { before: string; after: string; rows: number }[];
    rows: ChangedRow[];
  };
}

/**
 * Rebuilds `pipeline` into a candidate version under its configured policy, or continues the killed rebuild of the same policy.
 * @throws RebuildRefusedError when another rebuild of the pipeline runs, the configured `fields.eventId` differs from the live policy's,
 *   or rows of the pipeline are archived (src/guards/horizon.ts: restore them first)
 * @throws SourceUnreadableError (src/lifecycle/rebuildClassify.ts) when a CSV source's recorded header misses a column the policy reads
 * @throws TimeZoneRefusedError when the calendar window's zone is one PostgreSQL does not know; the database's error
 */
export async function rebuild(pool: Pool, pipeline: PipelineConfig, opts: RebuildOptions = {}): Promise<RebuildReport> {
  await guardTimeZone(pool, pipeline);
  const lock = await pool.connect();
  try {
    if (!(await tryRebuildLock(lock, pipeline.name)))
      throw new RebuildRefusedError(`a rebuild of pipeline ${pipeline.name} is running; wait for it to finish`);
    try {
      return await rebuildLocked(pool, pipeline, opts);
    } finally {
      await releaseRebuildLock(lock, pipeline.name);
    }
  } finally {
    lock.release();
  }
}

/** Why `pipeline` cannot be rebuilt yet (session windows; several inputs), or undefined. */
export function notRebuildable(pipeline: PipelineConfig): string | undefined {
  if (pipeline.window.type === "session")
    return `pipeline ${pipeline.name} has session windows: a rebuild computes fixed-length and calendar windows only`;
  if (Object.keys(pipeline.watermark.inputs ?? {}).length > 0)
    return `pipeline ${pipeline.name} has several inputs (watermark.inputs): a rebuild keeps one watermark, of the default input, only`;
  return undefined;
}

async function rebuildLocked(pool: Pool, pipeline: PipelineConfig, opts: RebuildOptions): Promise<RebuildReport> {
  const refused = notRebuildable(pipeline);
  if (refused !== undefined) throw new RebuildRefusedError(refused);
  // A rebuild recomputes every window from bronze: not while rows of the pipeline are archived.
  try {
    await refuseArchived(pool, pipeline, "rebuild of the windows", null);
  } catch (e) {
    if (e instanceof HorizonRefusedError) throw new RebuildRefusedError(e.message);
    throw e;
  }
  const canonical = canonicalPolicy(policyOf(pipeline));
  const hash = policyHash(canonical);
  const live = await readLivePolicy(pool, pipeline.name);
  if (live) {
    const liveId = ((JSON.parse(live.policy) as PolicyDocument).fields as { eventId?: string } | undefined)?.eventId;
    // With no accepted row (and no results) no event id is in use: the change is adopted by the next batch, not refused.
    if (liveId !== pipeline.fields.eventId && (await readResultsFootprint(pool, pipeline.name, hash)).length > 0) {
      throw new RebuildRefusedError(
        `fields.eventId: ${liveId ?? "(not set)"} → ${pipeline.fields.eventId ?? "(not set)"}: event ids are part of the ledger and are not rebuilt; put fields.eventId back`,
      );
    }
  }
  let run: RebuildRun | undefined = await readRunningRebuild(pool, pipeline.name);
  if (run && (opts.restart || run.policyVersion !== hash)) {
    const stale = run.version;
    await withTransaction(pool, (c) => deleteVersion(c, pipeline.name, stale));
    run = undefined;
  }
  const resumed = run !== undefined;
  if (run === undefined) {
    const ledgerSeq = await readPipelineMaxSeq(pool, pipeline.name);
    const version = await withTransaction(pool, (c) => createCandidate(c, pipeline.name, hash, canonical, ledgerSeq));
    run = (await readRebuild(pool, pipeline.name, version))!;
  }
  const { version, ledgerSeq, doneSeq, startedAt } = run;
  const left = await countBronzeBetween(pool, pipeline.name, doneSeq, ledgerSeq);
  opts.onStart?.({ version, resumed, rows: left });
  const rowsClassified = await classifyRange(
    pool,
    pipeline,
    version,
    doneSeq,
    ledgerSeq,
    opts.pageRows ?? REBUILD_PAGE_ROWS,
    (write, lastSeq, rows) =>
      withTransaction(pool, async (c) => {
        await write(c);
        await saveRebuildProgress(c, pipeline.name, version, lastSeq, rows);
      }),
    opts.onProgress,
  );
  return withTransaction(pool, async (c) => {
    await lockResults(c, pipeline.name);
    const { checkpoint, windows } = await buildWindows(c, pipeline, version, ledgerSeq);
    // The candidate's lateness histogram over the batches recorded up to its ledger bound, as the stream would have
    // counted them under its policy (src/db/sql/lateness/histogramVersions.ts); the cutover counts the later ones.
    await dropVersionHistogram(c, pipeline.name, version);
    if (pipeline.lateness.histogram)
      await countVersionHistogram(c, pipeline.name, version, windowSpecOf(pipeline), NOTHING_COUNTED, ledgerSeq);
    const reconcile = await reconcileCandidate(c, pipeline, version, ledgerSeq);
    // A cutover while the pages were written may have changed bronze under rows already marked against it
    // (a cutover marks the stored rows again, but not a page still in flight): mark them all again.
    if (await wentLiveSince(c, pipeline.name, startedAt))
      await markClassifications(c, pipeline.name, version, 0, ledgerSeq, false);
    const liveNow = await readLivePolicy(c, pipeline.name);
    const rows = await writeRebuildDiff(c, pipeline.name, version, liveNow?.version ?? null, ledgerSeq);
    await completeRebuild(c, pipeline.name, version, ledgerSeq, { ...reconcile }, rows);
    const diff = await readRebuildDiff(c, pipeline.name, version);
    return {
      pipeline: pipeline.name,
      version,
      policyVersion: hash,
      liveVersion: liveNow?.version ?? null,
      resumed,
      rowsClassified,
      checkpoint,
      windows,
      reconcile,
      diff: { ...diff, rows },
    };
  });
}

/** The candidate's windows and checkpoint: the oracle over its accepted rows up to `ledgerSeq`. */
async function buildWindows(
  c: PoolClient,
  pipeline: PipelineConfig,
  version: number,
  ledgerSeq: number,
): Promise<{ checkpoint: VersionCheckpoint; windows: number }> {
  const maxEventTime = await versionMaxEventTime(c, pipeline.name, version);
  const watermark = versionWatermark(pipeline, maxEventTime);
  const batchId = (await readCheckpoint(c, pipeline.name))?.batchId ?? -1;
  const windows = await computeVersionWindows(c, pipeline, version, watermark, batchId, null);
  const checkpoint = { batchId, lastSeq: ledgerSeq, maxEventTime, watermark, inputs: null };
  await saveVersionCheckpoint(c, pipeline.name, version, checkpoint);
  return { checkpoint, windows };
}

/** Reconcile of a candidate: windows against a recompute from its classification; every ledger row up to `ledgerSeq` classified once. */
async function reconcileCandidate(
  c: Queryable,
  pipeline: PipelineConfig,
  version: number,
  ledgerSeq: number,
): Promise<CandidateReconcile> {
  const { checked, mismatches } = await compareVersionWindows(c, pipeline, version);
  const ledger = { ...(await readCandidateLedger(c, pipeline.name, version, ledgerSeq)), balanced: false };
  ledger.balanced = ledger.accepted + ledger.quarantined === ledger.landed;
  return { ok: mismatches.length === 0 && ledger.balanced, windowsChecked: checked, mismatches, ledger };
}

/**
 * Removes version `version` of `pipeline` (`straggler rebuild --drop V`): its classification, results, checkpoint and diff.
 * @throws RebuildRefusedError when it is the live version or does not exist
 */
export async function dropVersion(pool: Pool, pipeline: string, version: number): Promise<void> {
  await withTransaction(pool, async (c) => {
    await lockResults(c, pipeline);
    const target = await lockVersion(c, pipeline, version);
    if (target === undefined) throw new RebuildRefusedError(`pipeline ${pipeline} has no version ${version}`);
    if (target.state === "live")
      throw new RebuildRefusedError(
        `version ${version} of pipeline ${pipeline} is live; cut over to another version first`,
      );
    await deleteVersion(c, pipeline, version);
  });
}
