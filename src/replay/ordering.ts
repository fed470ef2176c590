/**
 * How a replay puts a dataset that is not one file in arrival order into
 * arrival order: in memory when it is small enough, else in a
 * session-temporary staging table (src/db/sql/ingest/stageReplayRows.ts),
 * read back a page at a time so that memory stays flat whatever the size.
 *
 * Both give the same records in the same order: unknown arrival first, then
 * arrival instant, µs within its ms, file name (in the database's text order:
 * the names are sorted by the server once), line, reading order. A dataset
 * that outgrows the memory budget while it is read is staged from there on,
 * the records already held first: nothing is read twice.
 */
import { createReadStream } from "node:fs";
import path from "node:path";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import { msOfUs, usOfMs } from "../core/instants.js";
import { parseInstant } from "../core/timestamps.js";
import type { PoolClient } from "../db/pool.js";
import {
  copyReplayRows,
  createReplayRows,
  indexReplayRows,
  namesInTextOrder,
  readReplayPage,
  replayLine,
  type ReplayRow,
} from "../db/sql/ingest/stageReplayRows.js";
import { SourceRefused } from "../ingest/errors.js";
import { readOptionsFor, readRecords } from "../ingest/readers.js";
import type { MemoryBudget, ReplayOptions } from "./types.js";

/** Where the replay reads its records from, in arrival order: memory, the staging table or the file itself. */
export interface RowSource {
  /** The next record in arrival order, without taking it; undefined once every record is read. */
  peek(): Promise<ReplayRow | undefined>;
  /** Takes the record `peek` returned (call only after a `peek` that returned one). */
  take(): ReplayRow;
}

/** The default budget: 200,000 records and 32 Mi characters of raw text. */
const MEMORY_BUDGET: MemoryBudget = { rows: 200_000, bytes: 32 * 2 ** 20 };

/** Records read per page of the staging table (one statement each). */
const FETCH = 5000;

/** `[epoch ms, µs within the ms]` of a record's arrival time, or null when it has none or it cannot be read. */
export function arrivalOf(rec: RawRecord, pipeline: PipelineConfig, field: string): [number, number] | null {
  const at = rec.fields?.[field];
  const parsed = at
    ? parseInstant(at, pipeline.timestamps.format, pipeline.timestamps.timeZone, pipeline.timestamps.subMicrosecond)
    : undefined;
  return parsed?.ok ? [msOfUs(parsed.us), Number(parsed.us - usOfMs(msOfUs(parsed.us)))] : null;
}

const noNul = (s: string) => (s.includes("\u0000") ? s.replaceAll("\u0000", "") : s);

/** Whether a field's name or value holds a NUL (the record's fields are then copied without them). */
function hasNul(fields: Record<string, string | null>): boolean {
  for (const k in fields) if (k.includes("\u0000") || fields[k]?.includes("\u0000")) return true;
  return false;
}

/** A record read from a file as the staging table keeps it: NULs removed (PostgreSQL's text holds none), `ord` its reading order. */
function asReplayRow(rec: RawRecord, origin: string, arrival: [number, number] | null, ord: number): ReplayRow {
  let fields = rec.fields;
  if (fields !== null && hasNul(fields)) {
    const clean: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(fields)) clean[noNul(k)] = v === null ? null : noNul(v);
    fields = clean;
  }
  return {
    arrival_ms: arrival?.[0] ?? null,
    arrival_sub_ms: arrival?.[1] ?? null,
    origin,
    line: rec.line,
    ord,
    raw: noNul(rec.raw),
    parse_error: rec.parseError ?? null,
    fields,
    numbers:
      rec.numbers === undefined
        ? null
        : rec.numbers.some((n) => n.includes("\u0000"))
          ? rec.numbers.map(noNul)
          : rec.numbers,
  };
}

/**
 * Every file's records in reading order. A file whose header is refused (checked before any of its
 * records is read) is left out and reported; the others go on.
 * @throws what reading a file throws after its header (a file cannot be read, a record too large, …)
 */
async function* datasetRecords(
  pipeline: PipelineConfig,
  files: string[],
  arrivalField: string,
  refused: { file: string; reason: string }[],
  headers: Set<string>,
  onRefused?: (file: string, reason: string) => void,
): AsyncGenerator<ReplayRow> {
  let ord = 0;
  for (const file of files) {
    const origin = path.basename(file);
    let header = true;
    try {
      for await (const rec of readRecords(createReadStream(file), pipeline.source.format, {
        ...readOptionsFor(pipeline),
        onHeader: (_, text) => {
          header = false;
          headers.add(text);
        },
      })) {
        yield asReplayRow(rec, origin, arrivalOf(rec, pipeline, arrivalField), ++ord);
      }
    } catch (e) {
      // Only a refusal of the header (nothing of the file read yet) is the file's alone.
      if (!(e instanceof SourceRefused) || !header) throw e;
      refused.push({ file, reason: e.message });
      onRefused?.(file, e.message);
    }
  }
}

/** The records of an array, in order. */
function heldRows(rows: ReplayRow[]): RowSource {
  let i = 0;
  return { peek: async () => rows[i], take: () => rows[i++]! };
}

/** The staged records, a page (`FETCH` records, one statement) at a time, on the staging session. */
function stagedRows(staging: PoolClient): RowSource {
  let buffer: ReplayRow[] = [];
  let exhausted = false;
  let last: ReplayRow | null = null;
  return {
    async peek() {
      if (buffer.length === 0 && !exhausted) {
        buffer = await readReplayPage(staging, last, FETCH);
        if (buffer.length === 0) exhausted = true;
        else last = buffer[buffer.length - 1]!;
      }
      return buffer[0];
    },
    take: () => buffer.shift()!,
  };
}

/** Sorts `rows` in arrival order, the staging table's: file names compared as the server compares text (`client`'s database). */
async function sortInArrivalOrder(client: PoolClient, rows: ReplayRow[]): Promise<void> {
  const rank = new Map(
    (await namesInTextOrder(client, [...new Set(rows.map((r) => r.origin))])).map((name, i) => [name, i]),
  );
  rows.sort(
    (a, b) =>
      // Unknown arrival first, as the staging table's coalesce to bigint's minimum puts it (no instant is that early).
      (a.arrival_ms ?? Number.MIN_SAFE_INTEGER) - (b.arrival_ms ?? Number.MIN_SAFE_INTEGER) ||
      (a.arrival_sub_ms ?? -1) - (b.arrival_sub_ms ?? -1) ||
      rank.get(a.origin)! - rank.get(b.origin)! ||
      a.line - b.line ||
      a.ord - b.ord,
  );
}

/**
 * Reads every file and gives its records back in arrival order: held and sorted in memory while
 * they fit `opts.memoryBudget` (default `MEMORY_BUDGET`), else staged in a temporary table on `client`'s session (which must stay
 * reserved for the pages until the replay ends; the caller drops the table).
 * @returns the records' source, their count, and where they were ordered
 * @throws what reading a file throws (after its header), or the database's error
 */
export async function orderDataset(
  client: PoolClient,
  pipeline: PipelineConfig,
  opts: ReplayOptions,
  refused: { file: string; reason: string }[],
  headers: Set<string>,
): Promise<{ rows: RowSource; total: number; how: "memory" | "table" }> {
  const budget = opts.memoryBudget ?? MEMORY_BUDGET;
  const onProgress = opts.onStaged;
  const records = datasetRecords(pipeline, opts.files, opts.arrivalField, refused, headers, opts.onRefused)[
    Symbol.asyncIterator
  ]();
  const held: ReplayRow[] = [];
  let bytes = 0;
  let next = await records.next();
  while (!next.done && held.length < budget.rows && bytes + next.value.raw.length <= budget.bytes) {
    held.push(next.value);
    bytes += next.value.raw.length;
    if (held.length % 10_000 === 0) onProgress?.(held.length, "memory");
    next = await records.next();
  }
  if (next.done) {
    await sortInArrivalOrder(client, held);
    onProgress?.(held.length, "memory");
    return { rows: heldRows(held), total: held.length, how: "memory" };
  }
  // Over the budget: the records held so far are staged first, then the rest as it is read.
  let total = 0;
  const first = next.value;
  async function* lines(): AsyncGenerator<string> {
    const encode = (r: ReplayRow) => {
      total++;
      if (total % 10_000 === 0) onProgress?.(total, "table");
      return replayLine(r);
    };
    for (const r of held.splice(0)) yield encode(r);
    yield encode(first);
    for (let n = await records.next(); !n.done; n = await records.next()) yield encode(n.value);
  }
  await createReplayRows(client);
  await copyReplayRows(client, lines());
  onProgress?.(total, "table");
  await indexReplayRows(client);
  return { rows: stagedRows(client), total, how: "table" };
}
