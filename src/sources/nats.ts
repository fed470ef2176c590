/**
 * A NATS JetStream stream as a pipeline's log source (README "NATS JetStream
 * source"), through the `nats` client: a durable pull consumer with ack policy
 * `all` and `max_ack_pending` = the trigger's maxRowsPerBatch, so the server
 * never has more than one batch out, and one acknowledgement (of the batch's
 * last message, after it has landed) acknowledges the batch.
 *
 * The database's offsets are the truth (src/sources/logSource.ts). Before each
 * batch the database's offsets are read and the consumer is asked what it has
 * delivered: when every delivered message is acknowledged and nothing past the
 * database's position is, it goes on where it is; otherwise (a crash between landing and acknowledging, a
 * batch lost with its connection, a database restored from a backup, the
 * consumer's settings changed) it is made again to start just after the
 * position (`deliver_policy: by_start_sequence`). A batch is cut at the first
 * gap in its delivery sequence (a message lost on the way): acknowledging past
 * the gap would acknowledge the lost message.
 */
import {
  AckPolicy,
  connect,
  DeliverPolicy,
  nanos,
  RetentionPolicy,
  type Consumer,
  type ConsumerConfig,
  type ConsumerMessages,
  type JsMsg,
  type NatsConnection,
  type NatsError,
} from "nats";
import type { NatsSourceConfig } from "../config/natsSource.js";
import type { Logger } from "../log.js";
import { POSITION_PARTITION } from "../db/sql/ingest/logOffsets.js";
import { LogSourceRefused, type LogBatch, type LogMessage, type LogSource } from "./logSource.js";

/** JetStream's error codes (`api_error.err_code`) the source acts on. */
const STREAM_NOT_FOUND = 10059;
const CONSUMER_NOT_FOUND = 10014;

/** Longest wait of one pull for its batch to fill, ms (the client's minimum is 1 s). */
const MAX_PULL_WAIT_MS = 30_000;
const MIN_PULL_WAIT_MS = 1_000;

interface NatsBatch extends LogBatch {
  /** The last message received in order: acknowledging it acknowledges the batch (ack policy `all`). */
  last?: JsMsg;
}

/** How far a consumer has consumed its stream: its acknowledged floor, or before anything is acknowledged the sequence before its start. */
function consumedTo(ackFloor: number, optStartSeq: number | undefined): bigint {
  return BigInt(ackFloor > 0 ? ackFloor : Math.max(0, (optStartSeq ?? 1) - 1));
}

function jsErrorCode(e: unknown): number | undefined {
  return (e as NatsError | undefined)?.api_error?.err_code;
}

export class NatsSource implements LogSource {
  readonly log: string;
  private readonly durable: string;
  private nc: NatsConnection | undefined;
  private consumer: Consumer | undefined;
  /** False until the consumer has been checked against the database's offsets (again after anything went wrong). */
  private positioned = false;
  /** The delivery sequence of the last message received in order. */
  private lastDelivery = 0;
  /** The database's position (`*`) as this consumer left it: where it resumed, raised by each batch it acknowledged. */
  private believed = 0n;
  private pull: ConsumerMessages | undefined;
  private closing = false;

  /**
   * @param pipeline the pipeline's name (the default durable name is `straggler-<pipeline>`)
   * @param pullWaitMs how long one pull waits for its batch to fill (the trigger interval), clamped to 1-30 s
   */
  constructor(
    private readonly cfg: NatsSourceConfig,
    private readonly pipeline: string,
    private readonly pullWaitMs: number,
    private readonly logger: Logger,
  ) {
    this.log = `nats:${cfg.stream}`;
    this.durable = cfg.durable ?? `straggler-${pipeline}`;
  }

  /** The message's partition: its subject's configured token ('' when none is configured). */
  partitionOf(subject: string): string {
    return this.cfg.partitionToken === undefined ? "" : (subject.split(".")[this.cfg.partitionToken - 1] ?? "");
  }

  private async connection(): Promise<NatsConnection> {
    if (this.nc !== undefined && !this.nc.isClosed()) return this.nc;
    const nc = await connect({
      servers: this.cfg.servers,
      name: `straggler ${this.pipeline}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      timeout: 5_000,
    });
    this.nc = nc;
    this.positioned = false;
    void (async () => {
      // Messages in flight when the connection drops may be lost on the way: check the consumer again.
      for await (const s of nc.status()) if (s.type === "disconnect" || s.type === "reconnect") this.positioned = false;
    })().catch(() => undefined);
    return nc;
  }

  /** The consumer's settings for a consumer starting after `position` (0: from the stream's start). */
  private consumerConfig(maxMessages: number, position: bigint): Partial<ConsumerConfig> {
    return {
      durable_name: this.durable,
      ack_policy: AckPolicy.All,
      ack_wait: nanos(this.cfg.ackWait),
      max_ack_pending: maxMessages,
      max_deliver: -1,
      ...(this.cfg.subject !== undefined ? { filter_subject: this.cfg.subject } : {}),
      ...(position > 0n
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Number(position + 1n) }
        : { deliver_policy: DeliverPolicy.All }),
    };
  }

  /**
   * Checks the durable consumer against the database's position; makes it again when it
   * has delivered what is not acknowledged, acknowledged past the position, or has other settings.
   * @throws LogSourceRefused when the stream does not exist or keeps messages only while consumers are interested
   */
  private async position(offsets: Map<string, bigint>, maxMessages: number): Promise<void> {
    const nc = await this.connection();
    const jsm = await nc.jetstreamManager();
    const stream = this.cfg.stream;
    const si = await jsm.streams.info(stream).catch((e: unknown) => {
      if (jsErrorCode(e) === STREAM_NOT_FOUND)
        throw new LogSourceRefused(
          `stream ${stream} does not exist on ${this.cfg.servers.join(", ")}; create it (nats stream add ${stream}) and the pipeline starts consuming it`,
        );
      throw e;
    });
    if (si.config.retention === RetentionPolicy.Interest) {
      throw new LogSourceRefused(
        `stream ${stream} keeps messages only while consumers are interested (retention: interest); the source resumes from the database's offsets by making its consumer again, which such a stream may answer by dropping messages: use retention limits or workqueue`,
      );
    }
    const landed = offsets.get(POSITION_PARTITION) ?? 0n;
    const info = await jsm.consumers.info(stream, this.durable).catch((e: unknown) => {
      if (jsErrorCode(e) === CONSUMER_NOT_FOUND) return undefined;
      throw e;
    });
    const c = info?.config;
    const fits =
      info !== undefined &&
      c !== undefined &&
      c.ack_policy === AckPolicy.All &&
      (c.filter_subject ?? "") === (this.cfg.subject ?? "") &&
      c.max_ack_pending === maxMessages &&
      c.ack_wait === nanos(this.cfg.ackWait) &&
      info.num_ack_pending === 0 &&
      consumedTo(info.ack_floor.stream_seq, c.opt_start_seq) <= landed;
    if (fits) {
      this.lastDelivery = info.delivered.consumer_seq;
    } else {
      if (info !== undefined) await jsm.consumers.delete(stream, this.durable);
      await jsm.consumers.add(stream, this.consumerConfig(maxMessages, landed));
      this.lastDelivery = 0;
      this.logger.info(
        {
          pipeline: this.pipeline,
          stream,
          durable: this.durable,
          startAfter: String(landed),
          had: info && { ackPending: info.num_ack_pending, ackFloor: info.ack_floor.stream_seq },
        },
        `NATS consumer ${this.durable} set to resume after stream sequence ${landed}, the last one landed`,
      );
    }
    if (landed + 1n < BigInt(si.state.first_seq)) {
      this.logger.warn(
        { pipeline: this.pipeline, stream, landed: String(landed), firstSeq: si.state.first_seq },
        `stream ${stream} no longer holds sequences ${landed + 1n} to ${si.state.first_seq - 1}: they were removed before they landed`,
      );
    }
    this.consumer = await nc.jetstream().consumers.get(stream, this.durable);
    this.believed = landed;
    this.positioned = true;
  }

  async next(maxMessages: number, offsets: () => Promise<Map<string, bigint>>): Promise<LogBatch> {
    if (this.closing) return { messages: [] };
    const landed = await offsets();
    if (this.positioned && this.nc !== undefined) {
      // Nothing delivered may be left unacknowledged (a message lost after the last pull's end), and the
      // database's position must be the one this consumer left (not dropped, not moved by another): else resume from the database.
      const info = await (
        await this.nc.jetstreamManager()
      ).consumers
        .info(this.cfg.stream, this.durable)
        .catch(() => undefined);
      if (
        info === undefined ||
        info.num_ack_pending !== 0 ||
        info.delivered.consumer_seq !== this.lastDelivery ||
        (landed.get(POSITION_PARTITION) ?? 0n) !== this.believed
      ) {
        this.positioned = false;
      }
    }
    if (!this.positioned) await this.position(landed, maxMessages);
    const pull = await this.consumer!.fetch({
      max_messages: maxMessages,
      expires: Math.min(MAX_PULL_WAIT_MS, Math.max(MIN_PULL_WAIT_MS, this.pullWaitMs)),
    });
    this.pull = pull;
    const batch: NatsBatch = { messages: [] };
    let position = 0n;
    try {
      for await (const m of pull) {
        if (m.info.deliverySequence !== this.lastDelivery + 1) {
          // A message lost on the way: keep what came before it, resume from the database after this batch.
          this.positioned = false;
          pull.stop();
          break;
        }
        this.lastDelivery = m.info.deliverySequence;
        batch.messages.push(this.message(m));
        batch.last = m;
        if (BigInt(m.seq) > position) position = BigInt(m.seq);
      }
    } finally {
      this.pull = undefined;
    }
    if ((await pull.closed()) instanceof Error) this.positioned = false;
    if (batch.messages.length > 0) batch.position = position;
    return batch;
  }

  private message(m: JsMsg): LogMessage {
    const header = m.headers?.get(this.cfg.eventIdHeader);
    return {
      partition: this.partitionOf(m.subject),
      offset: BigInt(m.seq),
      data: m.data,
      eventId: header !== undefined && header !== "" ? header : `${this.log}:${m.seq}`,
      // The stream's timestamp, ns since the epoch (as a double: exact to a few hundred ns, the same at every delivery).
      storedUs: BigInt(Math.round(m.info.timestampNanos / 1000)),
    };
  }

  async commit(batch: LogBatch): Promise<void> {
    const last = (batch as NatsBatch).last;
    if (last === undefined) return;
    try {
      if (!(await last.ackAck())) this.positioned = false;
      else if (batch.position !== undefined && batch.position > this.believed) this.believed = batch.position;
    } catch (e) {
      // Landed but not acknowledged: the check before the next batch finds it and resumes from the database.
      this.positioned = false;
      throw e;
    }
  }

  reset(): void {
    this.positioned = false;
  }

  interrupt(): void {
    this.closing = true;
    this.pull?.stop();
  }

  async close(): Promise<void> {
    this.interrupt();
    const nc = this.nc;
    this.nc = undefined;
    this.positioned = false;
    try {
      if (nc !== undefined && !nc.isClosed()) await nc.close();
    } finally {
      this.closing = false; // a later next() (the consumer started again) connects anew
    }
  }
}
