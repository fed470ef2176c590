/**
 * Writes classified rows into `straggler.bronze_events` through COPY (text
 * format), as they are read: a landing's rows never sit in memory together.
 */
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import type { BronzeRow } from "../../../core/admission.js";
import { DEFAULT_INPUT } from "../../../core/watermark.js";
import { copyText, inChunks, inChunksOf } from "../../copyText.js";
import type { PoolClient } from "../../pool.js";

const COPY_BRONZE_SQL = `COPY straggler.bronze_events
  (source_id, pipeline, input, source_line, event_id, raw, raw_rest, raw_at, event_time, ingestion_time, group_key, value, status, reason, detail) FROM STDIN`;

/**
 * The start of every COPY line of one landing after its source id (which the COPY adds: `copyBronzeRows`):
 * the escaped pipeline and input (NULL for the default input), the same on every row. The policy the rows are classified under is the
 * landing's (`landed_sources.policy_version`), not the row's.
 */
export function bronzeLinePrefix(pipeline: string, input: string = DEFAULT_INPUT): string {
  // The default input is written as NULL (no bytes in the row; readers take NULL as `default`: migration 0042).
  return [pipeline, input === DEFAULT_INPUT ? null : input].map(copyText).join("\t") + "\t";
}

/**
 * One COPY text line (newline included): `prefix` (`bronzeLinePrefix`), then the row's columns.
 * @param text.raw the raw text to store: the row's, or null when its columns give it back (src/ingest/rawLayout.ts)
 * @param text.rest with `raw` null, the x fields (`raw_rest`); text.at, the a field (`raw_at`: an ISO 8601 UTC instant's text)
 * @param eventTime, ingestionTime the row's instants as `formatInstant` writes them (ISO 8601 UTC, µs kept); a null
 *   ingestion time is the landing's, which its source records (`bronze_sources.ingestion_time`, drizzle/0053)
 */
export function bronzeLine(
  prefix: string,
  r: BronzeRow,
  text: { raw: string | null; rest: string | null; at: string | null },
  eventTime: string | null,
  ingestionTime: string | null,
): string {
  // The instants (formatInstant's ISO text, the a field's: rawLayout.ts atInstantText), the status and the reason hold nothing COPY escapes. One join:
  // a flat string (a template of 22 parts would keep a rope of them until the line is sent).
  const parts = [
    r.line,
    copyText(r.eventId),
    copyText(text.raw),
    copyText(text.rest),
    text.at ?? "\\N",
    eventTime ?? "\\N",
    ingestionTime ?? "\\N",
    copyText(r.groupKey),
    copyText(r.value),
    r.status,
    r.reason ?? "\\N",
    copyText(r.detail),
  ];
  return prefix + parts.join("\t") + "\n";
}

/**
 * COPYs `inMemory` (lines already in memory), then `lines` (each from `bronzeLine`; null: none) of the source
 * `sourceId` into bronze on `client`, in the caller's transaction.
 * @throws what reading `lines` throws, or the database's error; the COPY is then aborted
 */
export async function copyBronzeRows(
  client: PoolClient,
  sourceId: number,
  lines: AsyncIterable<string> | null,
  inMemory: readonly string[] = [],
): Promise<void> {
  const prefix = `${sourceId}\t`;
  async function* chunks(): AsyncGenerator<string> {
    yield* inChunksOf(inMemory, undefined, prefix);
    if (lines !== null) yield* inChunks(lines, undefined, prefix);
  }
  await pipe(Readable.from(chunks()), client.query(copyFrom(COPY_BRONZE_SQL)));
}

/**
 * COPYs lines already in memory (each from `bronzeLine`), each part's after its source id, into bronze
 * on `client`, in the caller's transaction, as one write (group commit: src/ingest/groupCommit.ts).
 * @throws the database's error; the COPY is then aborted
 */
export async function copyBronzeLines(
  client: PoolClient,
  parts: readonly { sourceId: number; lines: readonly string[] }[],
): Promise<void> {
  const text = parts.map(({ sourceId, lines }) => lines.map((l) => `${sourceId}\t${l}`).join("")).join("");
  await pipe(Readable.from([text]), client.query(copyFrom(COPY_BRONZE_SQL)));
}
