/**
 * Writes classified rows into `straggler.bronze_events` through COPY (text
 * format), as they are read: a landing's rows never sit in memory together.
 */
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import type { BronzeRow } from "../../../core/admission.js";
import { formatInstant } from "../../../core/timestamps.js";
import { DEFAULT_INPUT } from "../../../core/watermark.js";
import { copyText, inChunks } from "../../copyText.js";
import type { PoolClient } from "../../pool.js";

const COPY_BRONZE_SQL = `COPY straggler.bronze_events
  (pipeline, source, input, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, reason, detail) FROM STDIN`;

function iso(us: bigint | null): string | null {
  return us === null ? null : formatInstant(us);
}

/**
 * The start of every COPY line of one landing: the escaped pipeline, source and input, the same on every row.
 * The policy the rows are classified under is the landing's (`landed_sources.policy_version`), not the row's.
 */
export function bronzeLinePrefix(pipeline: string, source: string, input: string = DEFAULT_INPUT): string {
  return [pipeline, source, input].map(copyText).join("\t") + "\t";
}

/** One COPY text line (newline included): `prefix` (`bronzeLinePrefix`), then the row's columns; instants as ISO 8601 UTC with µs. */
export function bronzeLine(prefix: string, r: BronzeRow): string {
  return prefix + [r.line, r.eventId, r.raw, iso(r.eventTimeUs), iso(r.ingestionTimeUs), r.groupKey, r.value, r.status, r.reason, r.detail].map(copyText).join("\t") + "\n";
}

/**
 * COPYs `lines` (each from `bronzeLine`) into bronze on `client`, in the caller's transaction.
 * @throws what reading `lines` throws, or the database's error; the COPY is then aborted
 */
export async function copyBronzeRows(client: PoolClient, lines: AsyncIterable<string>): Promise<void> {
  await pipe(Readable.from(inChunks(lines)), client.query(copyFrom(COPY_BRONZE_SQL)));
}

/**
 * COPYs lines already in memory (each from `bronzeLine`) into bronze on `client`, in the caller's
 * transaction, as one write (group commit: src/ingest/groupCommit.ts).
 * @throws the database's error; the COPY is then aborted
 */
export async function copyBronzeLines(client: PoolClient, lines: readonly string[]): Promise<void> {
  await pipe(Readable.from([lines.join("")]), client.query(copyFrom(COPY_BRONZE_SQL)));
}
