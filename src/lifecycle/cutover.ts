/**
 * Cut over and roll back (README "Incidents: hold, rebuild, cut over"; issue
 * 13 item 3): `straggler.window_results` switches to another version of a
 * pipeline in one transaction, under the pipeline's bronze-append and results
 * locks (no landing, micro-batch or correction interleaves; a reader sees
 * the old version or the new one, never a mix):
 *
 *   1. the target must be a complete candidate whose reconcile passed, or a
 *      retired version (one that served before: a rollback);
 *   2. a target behind the ledger catches up first: the rows landed since its
 *      checkpoint are classified under its policy, and the windows they touch
 *      are recomputed whole from its accepted rows (as the oracle does); its
 *      watermark moves with them;
 *   3. the target's lateness histogram (docs/lateness.md), when it keeps one,
 *      counts the batches recorded since it was counted (the rows of those
 *      batches only, as the catch-up reads them);
 *   4. the live version's checkpoint, windows awaiting correction,
 *      lateness histogram, classification and supersessions are stored under its number; the
 *      target's are put in their place (bronze's classification columns
 *      rewritten, its raw columns never); the states swap (old → retired,
 *      target → live), which is what moves the results: every version's
 *      windows are kept under its number (drizzle/0051), and the live ones are
 *      the live version's. Every landing records the target's policy. The stream
 *      goes on from the target's checkpoint.
 *
 * Cost (issue 30 item 3): the landings, the windows awaiting correction, and
 * the rows whose classification differs between the two versions, never the
 * ledger and never the windows (with the change feed, a comparison of the two
 * versions' windows). The report's count of the windows served is taken after
 * the switch commits. A
 * stored version keeps its classification as its difference from bronze's
 * (drizzle/0037, src/db/sql/lifecycle/versionSwap.ts): the swap stores the
 * live classification of the rows it rewrites only, rewrites only those in
 * bronze, and keeps every other stored version's difference true against the
 * new bronze (O(differing rows) each), so a candidate built before another
 * cutover, or a retired version, stays servable without being rebuilt. A
 * retired version's catch-up takes from bronze the rows of its own it lacks
 * where its dedupe and its recomputed windows read them.
 *
 * A hold (src/lifecycle/hold.ts) keeps applying: a held pipeline keeps
 * serving its held copy whatever is live underneath.
 */
import type { PolicyDocument } from "../config/policy.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { isoToUs } from "../core/instants.js";
import { withTransaction, type Pool } from "../db/pool.js";
import { lockResults } from "../db/sql/stream/lockResults.js";
import { lockVersion } from "../db/sql/lifecycle/versionLedger.js";
import { writeCutoverChanges } from "../db/sql/feed/cutoverChanges.js";
import { notifyChanges } from "../db/sql/feed/notifyChanges.js";
import { lockBronzeAppend } from "../db/sql/readmodel/pipelineRows.js";
import { readLivePolicy } from "../db/sql/stream/policyVersions.js";
import { readCheckpoint } from "../db/sql/stream/readCheckpoint.js";
import {
  readPipelineMaxSeq,
  readRebuild,
  readVersionCheckpoint,
  saveVersionCheckpoint,
  type VersionCheckpoint,
} from "../db/sql/lifecycle/rebuildRuns.js";
import { computeVersionWindows, fillTouchedWindows, versionMaxEventTime } from "../db/sql/lifecycle/versionWindows.js";
import {
  countVersionWindows,
  readMaxBatchId,
  rebaseStored,
  restoreVersion,
  stashLive,
  swapStates,
} from "../db/sql/lifecycle/versionSwap.js";
import {
  archivedPast,
  countVersionHistogram,
  dropVersionHistogram,
  readHistogramCoverage,
} from "../db/sql/lateness/histogramVersions.js";
import { windowSpecOf } from "../core/pipelineSpec.js";
import { classifyRange, REBUILD_PAGE_ROWS, versionWatermark } from "./classifyRange.js";
import { notRebuildable } from "./rebuild.js";

/** A cutover that cannot be made; nothing was changed. `status`: the HTTP status that says why (404 no such version, 409 not servable). */
export class CutoverRefusedError extends Error {
  override name = "CutoverRefusedError";
  constructor(
    message: string,
    readonly status: 404 | 409,
  ) {
    super(message);
  }
}

/** What a cutover answers (CLI, REST). */
export interface CutoverReport {
  pipeline: string;
  /** The version now live. */
  version: number;
  /** The version live before (now retired); null when there was none. */
  previous: number | null;
  /** True when the target had served before (a rollback). */
  rollback: boolean;
  /** Rows landed since the target was built (or retired), classified under its policy before it went live. */
  caughtUpRows: number;
  checkpoint: VersionCheckpoint;
  /** Windows the target serves, counted just after the switch committed (outside its transaction and locks). */
  windows: number;
  /** Bronze rows whose classification columns changed (rewritten: only those). */
  reclassifiedRows: number;
}

/**
 * `pipeline` as version `policyText` configures it: the configured pipeline with the version's policy blocks
 * (fields, timestamps, window, watermark, admission) in place of its own.
 */
function configOfPolicy(pipeline: PipelineConfig, policyText: string): PipelineConfig {
  const doc = JSON.parse(policyText) as PolicyDocument & { admission: Record<string, unknown> };
  const min = doc.admission.minEventTime;
  const admission = { ...doc.admission, minEventTime: min === undefined ? undefined : BigInt(min as string) };
  return {
    ...pipeline,
    fields: doc.fields,
    timestamps: doc.timestamps,
    window: doc.window,
    watermark: doc.watermark,
    admission,
  } as PipelineConfig;
}

/**
 * Makes version `version` of `pipeline` the live one (a candidate: cut over; a retired version: roll back), then
 * counts the windows it serves.
 * @throws CutoverRefusedError when there is no such version, it is live already, its rebuild is not complete or its reconcile failed
 * @throws the database's error; nothing changes then
 */
export async function cutover(pool: Pool, pipeline: PipelineConfig, version: number): Promise<CutoverReport> {
  const report = await switchVersion(pool, pipeline, version);
  // O(windows): after the switch, so that no landing, batch or reader waits on it.
  return { ...report, windows: await countVersionWindows(pool, pipeline.name, version) };
}

/**
 * The switch of `cutover` alone, its one transaction (what holds the pipeline's locks): the report but the count of
 * windows served.
 * @throws as `cutover`
 */
export async function switchVersion(
  pool: Pool,
  pipeline: PipelineConfig,
  version: number,
): Promise<Omit<CutoverReport, "windows">> {
  const name = pipeline.name;
  return withTransaction(pool, async (c) => {
    await lockBronzeAppend(c, name);
    await lockResults(c, name);
    const target = await lockVersion(c, name, version);
    if (target === undefined) throw new CutoverRefusedError(`pipeline ${name} has no version ${version}`, 404);
    if (target.state === "live")
      throw new CutoverRefusedError(`version ${version} of pipeline ${name} is live already`, 409);
    if (target.state === "candidate") {
      const run = await readRebuild(c, name, version);
      if (run?.status !== "complete")
        throw new CutoverRefusedError(
          `version ${version} of pipeline ${name} is not complete: its rebuild stopped at seq ${run?.doneSeq ?? 0} of ${run?.ledgerSeq ?? "?"}; run \`straggler rebuild -p ${name}\` to finish it`,
          409,
        );
      if (run.reconcileOk !== true)
        throw new CutoverRefusedError(
          `version ${version} of pipeline ${name} failed its reconcile; it cannot be cut over (rebuild it again)`,
          409,
        );
    }
    const stored = await readVersionCheckpoint(c, name, version);
    if (stored === undefined)
      throw new CutoverRefusedError(`version ${version} of pipeline ${name} has no stored checkpoint`, 409);
    const config = configOfPolicy(pipeline, target.policy);
    const refused = notRebuildable(config);
    if (refused !== undefined) throw new CutoverRefusedError(refused, 409);

    // Catch up with the ledger: rows landed since the target's checkpoint, classified under its policy.
    const ledgerSeq = await readPipelineMaxSeq(c, name);
    let checkpoint = stored;
    let caughtUpRows = 0;
    if (ledgerSeq > stored.lastSeq) {
      caughtUpRows = await classifyRange(
        c,
        config,
        version,
        stored.lastSeq,
        ledgerSeq,
        REBUILD_PAGE_ROWS,
        (write) => write(c),
        undefined,
        true,
      );
      const newest = await versionMaxEventTime(c, name, version, stored.lastSeq);
      const maxEventTime =
        newest === null || (stored.maxEventTime !== null && isoToUs(stored.maxEventTime) >= isoToUs(newest))
          ? stored.maxEventTime
          : newest;
      const watermark = versionWatermark(config, maxEventTime, stored.watermark);
      await fillTouchedWindows(c, config, version, stored.lastSeq);
      await computeVersionWindows(c, config, version, watermark, stored.batchId, stored.lastSeq);
      // The default input alone (a rebuild refuses several inputs): its state is the checkpoint's.
      checkpoint = { ...stored, lastSeq: ledgerSeq, maxEventTime, watermark, inputs: null };
      await saveVersionCheckpoint(c, name, version, checkpoint);
    }

    // The target's lateness histogram counts the batches recorded since it was counted (a rebuild's bound, or its
    // retirement), under its policy; with rows of that span archived it could not, and is dropped (the advisor replays).
    const coverage = await readHistogramCoverage(c, name, version);
    if (coverage !== undefined) {
      if (await archivedPast(c, name, coverage.mSeq)) await dropVersionHistogram(c, name, version);
      else await countVersionHistogram(c, name, version, windowSpecOf(config), coverage, ledgerSeq);
    }

    const live = await readLivePolicy(c, name);
    const liveBatch = (await readCheckpoint(c, name))?.batchId ?? -1;
    if (live) await stashLive(c, name, live.version, version);
    await rebaseStored(c, name, version, live?.version ?? null);
    // Batch ids go on from the highest any version used: progress rows are keyed by them.
    const batchId = Math.max(checkpoint.batchId, liveBatch, await readMaxBatchId(c, name));
    const { reclassifiedRows } = await restoreVersion(c, name, version, target.policyVersion, batchId);
    await swapStates(c, name, version);
    // The switch in the change feed: each window it changed (docs/change-feed.md).
    if (pipeline.feed.enabled && (await writeCutoverChanges(c, name, live?.version ?? null, version)) > 0)
      await notifyChanges(c, name);
    return {
      pipeline: name,
      version,
      previous: live?.version ?? null,
      rollback: target.state === "retired",
      caughtUpRows,
      checkpoint: { ...checkpoint, batchId },
      reclassifiedRows,
    };
  });
}
