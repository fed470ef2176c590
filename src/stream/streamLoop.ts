/**
 * The service's loop for one pipeline, in pg-boss style:
 * `while (!stopping) { try { land pending files (a failure is logged) → run batches until caught up } catch { log, back off } ; await wake-or-interval }`.
 * A wake (rows landed) skips the landing pass unless the trigger interval has passed since the last one.
 * The batches run even when the landing pass failed; the loop then backs off.
 * `wake()` cuts the wait short (LISTEN/NOTIFY when rows land), so freshness
 * is not bound to the trigger interval. `stop()` awaits the iteration in flight.
 * A pipeline refused by the policy guard (src/guards/policy.ts) is
 * logged once, at error, with the changed settings, and retried with the same
 * backoff: it streams again once its live results are dropped.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { backoffMs } from "../db/retry.js";
import type { Logger } from "../log.js";
import { PolicyRefusedError, TimeZoneRefusedError } from "../guards/index.js";
import { isCaughtUp, type BatchProgress, type BatchResult, type TriggerKind } from "./runBatch.js";

export interface StreamLoopDeps {
  /** Lands whatever is waiting in the pipeline's landing folder. */
  landPending: () => Promise<void>;
  /** Runs one micro-batch; null when bronze holds nothing new. */
  runBatch: (trigger: TriggerKind) => Promise<BatchProgress | null>;
  /** Maintenance after the stream caught up (planner statistics). */
  afterCaughtUp?: () => Promise<void>;
  log: Logger;
}

/** After a failed iteration the loop waits the trigger interval doubling per failure, with jitter (`backoffMs`), at most this, ms. */
const MAX_BACKOFF_MS = 30_000;

/**
 * Runs batches until one finds nothing to do, or one says it caught up (it read fewer rows
 * than a batch may hold: `isCaughtUp`, without a batch more that would find
 * nothing); returns the progress of each. Rows landed meanwhile wake the service's loop
 * again (LISTEN/NOTIFY), and its next iteration streams them.
 */
export async function runUntilCaughtUp(runBatch: StreamLoopDeps["runBatch"], trigger: TriggerKind, onBatch?: (p: BatchProgress) => void): Promise<BatchProgress[]> {
  const all: BatchProgress[] = [];
  for (;;) {
    const progress = await runBatch(trigger);
    if (progress === null) return all;
    all.push(progress);
    onBatch?.(progress);
    if (isCaughtUp(progress)) return all;
  }
}

export class StreamLoop {
  private stopping = false;
  private inFlight: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private woken = false;
  private failures = 0;
  /** The refusal last logged, so a refused pipeline is not logged every retry. */
  private refusal: string | undefined;
  /** When the last landing pass started (performance.now(), ms). */
  private lastLandingPass = -Infinity;

  constructor(
    private readonly pipeline: PipelineConfig,
    private readonly deps: StreamLoopDeps,
  ) {}

  start(): void {
    this.inFlight = this.loop();
  }

  /** Ends the current wait now: rows have landed. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Stops after the iteration in flight, and waits for it. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeUp?.();
    await this.inFlight;
  }

  private async loop(): Promise<void> {
    const log = this.deps.log.child({ pipeline: this.pipeline.name });
    while (!this.stopping) {
      let delay = this.pipeline.trigger.interval;
      let landingFailed: unknown;
      try {
        const wokenByRows = this.woken;
        this.woken = false;
        // Woken because rows landed, the loop streams them first: the landing folder is
        // scanned (a directory listing and a read of its sources) at most once per
        // trigger interval, not in front of every wake.
        if (!wokenByRows || performance.now() - this.lastLandingPass >= this.pipeline.trigger.interval) {
          this.lastLandingPass = performance.now();
          // A landing pass that fails (the database, one file) must not hold up the
          // rows already in bronze: the batches run whatever the landing did.
          await this.deps.landPending().catch((e: unknown) => {
            landingFailed = e;
            log.error({ err: e }, "landing pass failed; the stream goes on with what is in bronze");
          });
        }
        await runUntilCaughtUp(this.deps.runBatch, "interval", (progress) => {
          log.info(
            { batchId: progress.batchId, numInputRows: progress.numInputRows, watermark: progress.nextWatermark, numRowsDroppedByWatermark: progress.numRowsDroppedByWatermark, durationMs: progress.durationMs },
            "batch committed",
          );
          const hold = (progress as BatchResult).holdOpened;
          if (hold) {
            log.warn(
              { holdId: hold.holdId, rule: hold.rule, rows: hold.trippedBy?.rowCount },
              `pipeline ${progress.pipeline} held: ${hold.reason}; straggler.window_results keeps what it served before batch ${progress.batchId} until \`straggler release -p ${progress.pipeline}\``,
            );
          }
        });
        await this.deps.afterCaughtUp?.();
        if (this.refusal !== undefined) log.info("the configured policy is the live results' policy again; streaming");
        this.refusal = undefined;
        if (landingFailed !== undefined) throw landingFailed;
        this.failures = 0;
      } catch (e) {
        this.failures++;
        delay = backoffMs(this.failures + 1, { baseMs: this.pipeline.trigger.interval, capMs: MAX_BACKOFF_MS });
        if (e instanceof PolicyRefusedError) {
          if (this.refusal !== e.message) log.error({ changes: e.changes.map((c) => c.text), liveVersion: e.live.version }, e.message);
          this.refusal = e.message;
        } else if (e instanceof TimeZoneRefusedError) {
          // A configuration error, not a failure to retry loudly: logged once, status shows it (GET /pipelines).
          if (this.refusal !== e.message) log.error({ timeZone: e.timeZone }, e.message);
          this.refusal = e.message;
        } else log.error({ err: e, failures: this.failures, retryInMs: delay }, "stream iteration failed; retrying");
      }
      if (this.stopping || (this.woken && this.failures === 0)) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeUp = undefined;
    }
  }
}
