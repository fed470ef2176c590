/**
 * Lands a batch of log messages (src/sources/logSource.ts) in bronze, exactly
 * once: one landing per partition (source `LOG/PARTITION@FIRST-OFFSET`, or
 * `LOG@FIRST-OFFSET` when the log has no partitions configured) whose rows
 * name the partition as their input (docs/DESIGN.md "Several inputs"), each through
 * `landRecords` (one transaction under the pipeline's append lock), with the
 * partition's new offset recorded before COMMIT. A message at or below its
 * partition's recorded offset has landed before (a redelivery after a crash
 * between COMMIT and acknowledgement): it is left out. The offset is moved
 * only from the value read before the landing (`advanceLogOffset`): if
 * another consumer landed the partition meanwhile, the landing rolls back
 * (`LogOffsetMovedError`) and nothing lands twice; so does a landing whose
 * source another consumer recorded meanwhile. The batch's last landing
 * also raises the log's position (`*`, for a log whose offsets are one
 * sequence across partitions: NATS), from where a restarted consumer resumes.
 * Under a replica's `lease`, each landing's last statement is the lease's
 * fence (src/cluster/fencing.ts): a deposed owner lands nothing.
 */
import type { PipelineLease } from "../cluster/fencing.js";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import type { Pool } from "../db/pool.js";
import {
  advanceLogOffset,
  LogOffsetMovedError,
  raiseLogPosition,
  readLogOffsets,
} from "../db/sql/ingest/logOffsets.js";
import { landRecords } from "../ingest/copyToBronze.js";
import type { LandResult } from "../ingest/landAnswer.js";
import { utf8Prefix } from "../ingest/lineSplitter.js";
import { jsonFields } from "../ingest/jsonRecords.js";
import { textProblem } from "../ingest/readers.js";
import type { LogBatch, LogMessage } from "./logSource.js";

/** What a batch did. */
export interface LogBatchResult {
  /** Messages landed now (accepted + quarantined). */
  landed: number;
  accepted: number;
  quarantined: number;
  /** Messages that had landed before (at or below their partition's offset): acknowledged, not landed again. */
  alreadyLanded: number;
  /** One landing per partition with new messages. */
  landings: LandResult[];
}

/**
 * One message as a record: its payload is one JSON object (`source.format: jsonl`);
 * line = its place in the landing (1-based); the log's event id and stored time go with it
 * (the event id and ingestion time when the data has none). Too long, invalid UTF-8, a NUL or not a
 * JSON object: a record with `fields: null` (MALFORMED), kept in bronze as it came.
 */
export function messageRecord(m: LogMessage, line: number, maxRecordBytes: number): RawRecord {
  const from = { eventId: m.eventId, ingestionTimeUs: m.storedUs };
  const bytes = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
  if (bytes.length > maxRecordBytes)
    return {
      line,
      raw: utf8Prefix(bytes, maxRecordBytes),
      fields: null,
      parseError: `longer than ${maxRecordBytes} bytes`,
      ...from,
    };
  const raw = bytes.toString("utf8").replace(/\r?\n$/, "");
  const problem = textProblem(raw);
  if (problem !== undefined) return { line, raw, fields: null, parseError: problem, ...from };
  const parsed = jsonFields(raw);
  return "error" in parsed
    ? { line, raw, fields: null, parseError: parsed.error, ...from }
    : { line, raw, ...parsed, ...from };
}

/** The landing source of a partition's messages starting at `first`. */
export function logSourceName(log: string, partition: string, first: bigint): string {
  return partition === "" ? `${log}@${first}` : `${log}/${partition}@${first}`;
}

/**
 * Lands `batch` of `log` for `pipeline`; call `LogSource.commit` only after it returns.
 * @returns counts of what landed and of what had landed before
 * @throws LogOffsetMovedError when another consumer landed a partition meanwhile (that partition's landing rolled back)
 * @throws LeaseLostError when `opts.lease` is no longer held (that partition's landing rolled back)
 * @throws database errors (the landing in progress rolls back; partitions landed before it stay landed, with their offsets)
 */
export async function landLogBatch(
  pool: Pool,
  pipeline: PipelineConfig,
  log: string,
  batch: LogBatch,
  opts: { lease?: Pick<PipelineLease, "assertHeld"> } = {},
): Promise<LogBatchResult> {
  const result: LogBatchResult = { landed: 0, accepted: 0, quarantined: 0, alreadyLanded: 0, landings: [] };
  if (batch.messages.length === 0) return result;
  const offsets = await readLogOffsets(pool, pipeline.name, log);
  const groups = new Map<string, LogMessage[]>();
  for (const m of batch.messages) {
    const group = groups.get(m.partition);
    const after = group?.at(-1)?.offset ?? offsets.get(m.partition);
    if (after !== undefined && m.offset <= after) {
      result.alreadyLanded++;
      continue;
    }
    if (group === undefined) groups.set(m.partition, [m]);
    else group.push(m);
  }
  const parts = [...groups];
  for (const [i, [partition, messages]] of parts.entries()) {
    const lastOfBatch = i === parts.length - 1;
    async function* records(): AsyncGenerator<RawRecord> {
      for (const [j, m] of messages.entries()) yield messageRecord(m, j + 1, pipeline.source.maxRecordBytes);
    }
    const landing = await landRecords(pool, pipeline, logSourceName(log, partition, messages[0]!.offset), records(), {
      landingTimeMs: Date.now(),
      // The partition is the rows' input (its own watermark); a log without partitions is the default input.
      ...(partition === "" ? {} : { input: partition }),
      beforeCommit: async (client) => {
        await advanceLogOffset(client, {
          pipeline: pipeline.name,
          log,
          partition,
          expected: offsets.get(partition) ?? null,
          offset: messages.at(-1)!.offset,
          messages: messages.length,
        });
        if (lastOfBatch && batch.position !== undefined)
          await raiseLogPosition(client, pipeline.name, log, batch.position, batch.messages.length);
        await opts.lease?.assertHeld(client);
      },
    });
    // The source was recorded by another landing since the offsets were read (another consumer
    // landed a batch starting at the same offset): this batch may hold more; read it again.
    if (landing.alreadyLanded) throw new LogOffsetMovedError(log, partition);
    result.landings.push(landing);
    result.landed += landing.landed;
    result.accepted += landing.accepted;
    result.quarantined += landing.quarantined;
  }
  // Nothing new (every message had landed before): the position still moves past them.
  if (parts.length === 0 && batch.position !== undefined)
    await raiseLogPosition(pool, pipeline.name, log, batch.position, batch.messages.length);
  return result;
}
