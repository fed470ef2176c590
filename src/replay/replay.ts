/**
 * Replay: lands a dataset in the order of an arrival-time column, in
 * micro-batches that each span `batchSpan` of arrival time, and runs the
 * stream after each one — what the pipeline would have seen live.
 *
 * The files are first COPYed into a session-temporary table with each row's
 * arrival instant (memory stays flat whatever the dataset's size); a cursor
 * then reads them back in arrival order. Each span lands as the source
 * `replay:<dataset>:<span start>`, so an interrupted replay resumes where it
 * stopped. Made-up event ids are `<file>:<line>`, the same as landing the
 * files from the landing folder would give, so landing both ways dedupes.
 * Rows whose arrival time cannot be read land in the first micro-batch.
 * When the replay completes, each file is recorded as landed under its own
 * name (with 0 rows), so the service's landing folder does not land it again.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import { copyText, inChunks } from "../db/copyText.js";
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import { msOfUs, parseInstant, usOfMs } from "../core/timestamps.js";
import type { Pool, PoolClient } from "../db/pool.js";
import { landRecords, type LandResult } from "../ingest/copyToBronze.js";
import { SourceRefused } from "../ingest/errors.js";
import { readOptionsFor, readRecords } from "../ingest/readers.js";
import { runBatch, type BatchProgress } from "../stream/runBatch.js";
import { analyzeIfStale } from "../db/statistics.js";

export interface ReplayOptions {
  files: string[];
  arrivalField: string;
  /** Span of arrival time per micro-batch, ms. */
  batchSpanMs: number;
  onStaged?: (rows: number) => void;
  /** A file left out: its header is refused (src/ingest/csvRecords.ts). */
  onRefused?: (file: string, reason: string) => void;
  onBatch?: (info: { rowsDone: number; rowsTotal: number; land: LandResult; batches: BatchProgress[] }) => void;
}

export interface ReplaySummary {
  rowsStaged: number;
  replayBatches: number;
  skippedBatches: number;
  streamBatches: number;
  elapsedMs: number;
  /** Files left out, with the reason. */
  refused: { file: string; reason: string }[];
}

const FETCH = 5000;

/**
 * Stages every file's records in a temporary table. A file that is refused
 * (a bad CSV header: checked before any of its rows is staged) is left out
 * and reported; the others go on.
 */
async function stage(client: PoolClient, p: PipelineConfig, opts: ReplayOptions, refused: ReplaySummary["refused"]): Promise<number> {
  await client.query(`CREATE TEMP TABLE replay_rows (arrival_ms bigint, arrival_sub_ms integer, origin text, line integer, raw text, parse_error text, fields jsonb, numbers text[])`);
  let rows = 0;
  for (const file of opts.files) {
    const origin = path.basename(file);
    let header = true;
    async function* encode(): AsyncGenerator<string> {
      for await (const rec of readRecords(createReadStream(file), p.source.format, { ...readOptionsFor(p), onHeader: () => (header = false) })) {
        const at = rec.fields?.[opts.arrivalField];
        const parsed = at ? parseInstant(at, p.timestamps.format, p.timestamps.timeZone) : undefined;
        rows++;
        if (rows % 10_000 === 0) opts.onStaged?.(rows);
        const fields = rec.fields === null ? null : JSON.stringify(rec.fields).replace(/\\u0000/g, "");
        const numbers = rec.numbers === undefined ? null : `{${rec.numbers.map((n) => `"${n.replace(/\u0000/g, "").replace(/[\\"]/g, "\\$&")}"`).join(",")}}`;
        yield [...(parsed?.ok ? [msOfUs(parsed.us), Number(parsed.us - usOfMs(msOfUs(parsed.us)))] : [null, null]), origin, rec.line, rec.raw.replace(/\u0000/g, ""), rec.parseError ?? null, fields, numbers].map(copyText).join("\t") + "\n";
      }
    }
    try {
      await pipe(Readable.from(inChunks(encode())), client.query(copyFrom("COPY replay_rows FROM STDIN")));
    } catch (e) {
      // Only a refusal of the header (nothing of the file staged yet) is the file's alone.
      if (!(e instanceof SourceRefused) || !header) throw e;
      refused.push({ file, reason: e.message });
      opts.onRefused?.(file, e.message);
    }
  }
  opts.onStaged?.(rows);
  await client.query("CREATE INDEX ON replay_rows (arrival_ms NULLS FIRST, arrival_sub_ms, origin, line)");
  await client.query("ANALYZE replay_rows");
  return rows;
}

/** A dataset's identity: its files' names and sizes (a changed file makes a new replay). */
async function datasetId(files: string[]): Promise<string> {
  const h = createHash("sha256");
  for (const f of files) h.update(`${path.basename(f)}:${(await stat(f)).size}\n`);
  return h.digest("hex").slice(0, 12);
}

interface Row {
  arrival_ms: number | null;
  /** The arrival time's microseconds within its millisecond (0-999): orders events within one ms. */
  arrival_sub_ms: number | null;
  origin: string;
  line: number;
  raw: string;
  parse_error: string | null;
  fields: Record<string, string | null> | null;
  numbers: string[] | null;
}

/**
 * Replays `opts.files` through landing and the stream of `p`.
 * @returns counts and elapsed time; per-batch results arrive through `onBatch`
 * @throws when a file cannot be read or the database fails (landed spans stay landed; run again to resume)
 */
export async function replay(pool: Pool, p: PipelineConfig, opts: ReplayOptions): Promise<ReplaySummary> {
  const started = Date.now();
  const id = await datasetId(opts.files);
  const client = await pool.connect();
  try {
    const refused: ReplaySummary["refused"] = [];
    const total = await stage(client, p, opts, refused);
    await client.query("BEGIN");
    await client.query("DECLARE replay_cursor NO SCROLL CURSOR FOR SELECT * FROM replay_rows ORDER BY arrival_ms NULLS FIRST, arrival_sub_ms, origin, line");
    const span = opts.batchSpanMs;
    let buffer: Row[] = [];
    let exhausted = false;
    const fill = async () => {
      if (buffer.length === 0 && !exhausted) {
        buffer = (await client.query(`FETCH ${FETCH} FROM replay_cursor`)).rows as Row[];
        if (buffer.length === 0) exhausted = true;
      }
    };
    const spanOf = (r: Row) => (r.arrival_ms === null ? null : Math.floor(r.arrival_ms / span) * span);
    let done = 0, replayBatches = 0, skipped = 0, streamBatches = 0;
    for (;;) {
      await fill();
      if (exhausted) break;
      const current = spanOf(buffer[0]!);
      async function* records(): AsyncGenerator<RawRecord> {
        for (;;) {
          await fill();
          if (exhausted || spanOf(buffer[0]!) !== current) return;
          const r = buffer.shift()!;
          done++;
          yield r.fields === null
            ? { line: r.line, raw: r.raw, fields: null, parseError: r.parse_error ?? "not a record", origin: r.origin }
            : { line: r.line, raw: r.raw, fields: r.fields, origin: r.origin, ...(r.numbers === null ? {} : { numbers: r.numbers }) };
        }
      }
      const label = current === null ? "no-arrival-time" : new Date(current).toISOString();
      // Records without an ingestion time of their own arrive at the end of their span.
      const landingTimeMs = current === null ? started : current + span;
      const land = await landRecords(pool, p, `replay:${id}:${label}`, records(), { landingTimeMs });
      if (land.alreadyLanded) {
        skipped++;
        await (async () => { for await (const _ of records()) void _; })(); // skip the span's rows
      } else {
        replayBatches++;
      }
      // Stream until this span's rows are consumed (no extra empty batch per span).
      const batches: BatchProgress[] = [];
      for (;;) {
        const b = await runBatch(pool, p, "replay");
        if (b === null) break;
        batches.push(b);
        if (land.lastSeq !== null && b.endOffset >= land.lastSeq) break;
      }
      streamBatches += batches.length;
      if ((replayBatches + skipped) % 100 === 0) await analyzeIfStale(pool, p.name);
      opts.onBatch?.({ rowsDone: done, rowsTotal: total, land, batches });
    }
    await client.query("COMMIT");
    // The files are now in bronze: the landing folder must not land them again.
    // They are recorded with 0 rows (their rows count under the replay:… sources).
    for (const file of opts.files) {
      if (refused.some((r) => r.file === file)) continue;
      await pool.query(
        `INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined)
         VALUES ($1, $2, $3, 0, 0, 0) ON CONFLICT DO NOTHING`,
        [p.name, path.basename(file), `replay:${id}`],
      );
    }
    return { rowsStaged: total, replayBatches, skippedBatches: skipped, streamBatches, elapsedMs: Date.now() - started, refused };
  } finally {
    await client.query("ROLLBACK").catch(() => undefined);
    await client.query("DROP TABLE IF EXISTS replay_rows").catch(() => undefined);
    client.release();
  }
}
