/**
 * The service's consumer of a pipeline's log source, startable and stoppable
 * on its own (an owner of the pipeline starts it, and stops it when it loses
 * the pipeline): `while (!stopping) { next batch → land it → acknowledge it }`.
 * A failure (the log or the database unreachable, a refused configuration) is
 * logged — a configuration refusal once per message — and retried with
 * backoff; the source then resumes from the database's offsets. Rows landed
 * wake the stream through bronze's NOTIFY, like every landing.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import type { Backoff } from "../db/retry.js";
import { readLogOffsets } from "../db/sql/ingest/logOffsets.js";
import type { PipelineLease } from "../cluster/fencing.js";
import type { OwnedTaskStarter } from "../cluster/ownedWork.js";
import type { Logger } from "../log.js";
import { startLoop, type Loop, type RoundOutcome } from "../loop.js";
import { landLogBatch, type LogBatchResult } from "./landLogBatch.js";
import { LogSourceRefused, type LogSource } from "./logSource.js";

/** The wait after a failed batch: 500 ms doubling, at most 15 s. */
const FAILURE_BACKOFF: Backoff = { baseMs: 500, capMs: 15_000 };

export class LogConsumer {
  private running: Promise<void> | undefined;
  private loop: Loop | undefined;
  /** The refusal last logged, so a refused configuration is not logged every retry. */
  private refusal: string | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly pipeline: PipelineConfig,
    private readonly source: LogSource,
    private readonly log: Logger,
    private readonly opts: {
      /**
       * The pipeline's lease (a replica): once it is lost no further batch is fetched and the consumer
       * ends; each landing ends with its fence, so a deposed owner lands nothing (src/cluster/fencing.ts).
       */
      lease?: PipelineLease;
      /** Called after each batch has landed and been acknowledged. */
      onBatch?: (r: LogBatchResult) => void;
    } = {},
  ) {}

  start(): void {
    if (this.running) return;
    const log = this.log.child({ pipeline: this.pipeline.name, log: this.source.log });
    const loop = startLoop((ctx) => this.batch(log, ctx.failures), {
      // A batch that landed is followed by the next at once ("again"); the interval is never waited.
      intervalMs: 0,
      backoff: FAILURE_BACKOFF,
      onError: (e, { failures, retryInMs }) => {
        if (e instanceof LogSourceRefused) {
          if (this.refusal !== e.message) log.error(e.message);
          this.refusal = e.message;
        } else
          log.warn(
            { err: e, failures, retryInMs: Math.round(retryInMs) },
            "log batch failed; resuming from the database's offsets",
          );
      },
    });
    this.loop = loop;
    this.running = loop.done
      .then(() => this.source.close().catch((e: unknown) => log.warn({ err: e }, "closing the log connection failed")))
      .finally(() => (this.running = undefined));
  }

  /** Stops after the batch in flight has landed and been acknowledged; closes the connection. */
  async stop(): Promise<void> {
    this.source.interrupt();
    await this.loop?.stop();
    await this.running;
  }

  /** One batch: fetched, landed, acknowledged; `done` once the pipeline's lease is lost. */
  private async batch(log: Logger, failures: number): Promise<RoundOutcome> {
    if (this.opts.lease?.owns() === false) {
      log.info("the pipeline's lease is lost: no further batch");
      return "done";
    }
    const max = this.pipeline.trigger.maxRowsPerBatch;
    const offsets = () => readLogOffsets(this.pool, this.pipeline.name, this.source.log);
    try {
      const batch = await this.source.next(max, offsets);
      if (batch.messages.length > 0) {
        const r = await landLogBatch(this.pool, this.pipeline, this.source.log, batch, { lease: this.opts.lease });
        await this.source.commit(batch);
        log.debug(
          { landed: r.landed, accepted: r.accepted, quarantined: r.quarantined, alreadyLanded: r.alreadyLanded },
          "log batch landed",
        );
        this.opts.onBatch?.(r);
      }
    } catch (e) {
      // The lease went while the batch landed (a fenced landing rolled back, logged by the lease): unacknowledged, it is the next owner's.
      if (this.opts.lease?.owns() === false) return "done";
      this.source.reset();
      throw e;
    }
    if (this.refusal !== undefined || failures > 0) log.info("consuming again");
    this.refusal = undefined;
    return "again";
  }
}

/**
 * The service's starter of log consumers (owned work, src/cluster/ownedWork.ts): for a
 * pipeline whose source is a log (`source.nats`), a started consumer that stops fetching
 * once the pipeline's lease is lost; undefined for the others. The NATS client is loaded
 * only when a pipeline has a NATS source. A pull waits up to the trigger interval (1-30 s)
 * for its batch to fill.
 */
export async function logConsumerStarter(
  pool: Pool,
  pipelines: PipelineConfig[],
  log: Logger,
): Promise<OwnedTaskStarter> {
  const nats = pipelines.some((p) => p.source.nats !== undefined) ? await import("./nats.js") : undefined;
  return (pipeline, lease) => {
    if (pipeline.source.nats === undefined || nats === undefined) return undefined;
    const consumer = new LogConsumer(
      pool,
      pipeline,
      new nats.NatsSource(pipeline.source.nats, pipeline.name, pipeline.trigger.interval, log),
      log,
      { lease },
    );
    consumer.start();
    return consumer;
  };
}
