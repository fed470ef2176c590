/**
 * The shape of a durable log source (a NATS JetStream stream today; a Kafka
 * topic fits the same shape, README "Log sources"): the consumer delivers
 * batches of messages, each with a partition and an offset; the batch lands in
 * bronze with each partition's offset recorded in the same transaction
 * (src/sources/landLogBatch.ts); only then is it acknowledged (`commit`).
 * Offsets are the database's: when a consumer (re)starts, or after anything
 * went wrong, it resumes from the offsets recorded in bronze's transactions,
 * not from what the log believes was acknowledged.
 */

/** One message of a log. */
export interface LogMessage {
  /**
   * The partition the message belongs to: a pipeline input (NATS: the configured subject
   * token, '' when none; Kafka: the partition number as text).
   */
  partition: string;
  /** Its offset: strictly increasing within its partition (NATS: the stream sequence; Kafka: the partition offset). */
  offset: bigint;
  /** The payload: one record (a JSON object). */
  data: Uint8Array;
  /** The event id the log gives the message (NATS: the `Nats-Msg-Id` header, else `nats:STREAM:seq`). */
  eventId: string;
  /** When the log stored the message, epoch µs: its ingestion time (NATS: the stream's timestamp; Kafka: the message timestamp). */
  storedUs: bigint;
}

/** A batch of messages, in the order the log delivered them (offsets increase within each partition). */
export interface LogBatch {
  messages: LogMessage[];
  /**
   * The log's position after this batch, when its offsets are one sequence across
   * partitions (NATS: the last stream sequence delivered); undefined for a log whose
   * partitions each have their own (Kafka).
   */
  position?: bigint;
}

/** A log consumer for one pipeline. */
export interface LogSource {
  /** The log's name in `straggler.log_offsets` and in bronze's source names: `nats:STREAM`. */
  readonly log: string;
  /**
   * Waits for the next batch: at most `maxMessages` messages (the trigger's
   * maxRowsPerBatch), never more than one batch held. Resumes from `offsets` (the
   * database's: partition → last landed offset, `*` → the position, read before each
   * batch) when it starts, after `reset()`, and when the log's view disagrees with them.
   * @returns the batch (empty when nothing came within the wait)
   * @throws the log's errors (connection lost, stream missing); the caller backs off and calls reset()
   */
  next(maxMessages: number, offsets: () => Promise<Map<string, bigint>>): Promise<LogBatch>;
  /** Acknowledges every message of `batch`: called only after the batch has landed. */
  commit(batch: LogBatch): Promise<void>;
  /** Something went wrong: the next `next()` resumes from the database's offsets. */
  reset(): void;
  /** Ends a `next()` in progress: it returns what it has received so far, and later calls return empty batches. */
  interrupt(): void;
  /** Closes the connection (after the last `commit`). */
  close(): Promise<void>;
}

/** The source cannot consume its log as configured (a stream missing, a retention it cannot resume from): the message says what to change. */
export class LogSourceRefused extends Error {
  override name = "LogSourceRefused";
}
