/**
 * Readers turn a byte stream into `RawRecord`s, never holding the whole
 * input, nor a whole line longer than the record limit, in memory. A line
 * that is not a record becomes a record with `fields: null` and a
 * `parseError`; it never stops the input.
 *
 * - `jsonl`: one JSON object per line, parsed losslessly (`lossless-json`):
 *   numbers keep their exact text, so `0.1` stays `0.1` and `1e400` stays
 *   `1e400` for the decimal check to refuse.
 * - `csv`: a header line, then records as RFC 4180 and csv-parse read them:
 *   a quoted field may hold line ends (LF, CRLF or a lone CR), and its record
 *   goes on until the quote closes; the record's raw text is all of its lines
 *   with their line ends as they were. Read by header name with `csv-parse`
 *   in the configured dialect (src/ingest/csvRecords.ts). With
 *   `source.csv.multiline: false` such a record is one MALFORMED record. A
 *   quote still open at the end of the input is one MALFORMED record ("a
 *   quoted field is not closed at the end of the input"); no text inside a
 *   field is ever read as a record of its own.
 *
 * Lines are split on bytes (src/ingest/lineSplitter.ts): a line longer than
 * `maxRecordBytes` (default 1 MiB) is MALFORMED ("longer than … bytes"), its
 * raw text cut to that many bytes, and reading goes on with the next line; a
 * multi-line record past the limit is MALFORMED the same way, its lines read
 * on (not kept) until its quote closes. Blank lines carry no record and are
 * skipped. A UTF-8 BOM is removed; a UTF-16 or UTF-32 one refuses the whole
 * source (SourceRefused, nothing read) with a message saying to convert it, as do
 * NUL bytes in the first four in the pattern of UTF-16 or UTF-32 text without a mark. Invalid UTF-8 (decoded as U+FFFD) and NUL
 * bytes make a line malformed. A final line without a newline is a record
 * unless `unterminated: "hold"` (append-only files), where it waits for its
 * newline, as does a record whose quote is still open: `position` moves only
 * past complete records, so the next piece starts at the record's first line.
 *
 * A JSON line's fields are src/ingest/jsonRecords.ts's, a CSV record's src/ingest/csvRecords.ts's; the
 * encoding check of the first bytes is src/ingest/sourceEncoding.ts.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { RawRecord } from "../core/admission.js";
import {
  csvColumns,
  csvFields,
  csvParseOptions,
  csvRecordFields,
  DEFAULT_CSV_DIALECT,
  quoteOpenAtEnd,
  requiredColumns,
  type CsvColumns,
  type CsvDialect,
  type RequiredColumn,
} from "./csvRecords.js";
import { SourceRefused } from "./errors.js";
import { jsonFields } from "./jsonRecords.js";
import { splitLines, utf8Prefix, type SplitLine } from "./lineSplitter.js";
import { notUtf8 } from "./sourceEncoding.js";

export type SourceFormat = "csv" | "jsonl";

/** Default record limit, bytes (`source.maxRecordBytes`): a longer line is quarantined, its raw text cut to this many bytes. */
export const MAX_RECORD_BYTES = 1_048_576;

/** Why a record's text cannot be stored as it is (invalid UTF-8, a NUL), or undefined. */
export function textProblem(text: string): string | undefined {
  if (text.includes("\uFFFD")) return "invalid UTF-8";
  if (text.includes("\u0000")) return "contains a NUL character";
  return undefined;
}

export interface ReadOptions {
  /** CSV dialect (default: comma, double quotes, strict). */
  csv?: CsvDialect;
  /** Columns a CSV header must name; none by default. */
  required?: RequiredColumn[];
  /** Longest record, bytes (default MAX_RECORD_BYTES). */
  maxRecordBytes?: number;
  /** A final line without a newline: a record (default) or held back (`hold`). */
  unterminated?: "record" | "hold";
  /** The CSV header, already read (the later pieces of an append-only file): the input holds records only. */
  header?: CsvColumns;
  /** Offset of the input's first byte in its file, and its first line number (append-only pieces). */
  startOffset?: number;
  firstLine?: number;
  /** Updated as records complete: the byte offset just after the last complete record, and its last line. */
  position?: { offset: number; line: number };
  /** Sees every chunk of input bytes (to hash them). */
  onChunk?: (chunk: Buffer) => void;
  /** Receives the CSV header's columns once read, and the header line's text (recorded per source for a rebuild). */
  onHeader?: (columns: CsvColumns, text: string) => void;
}

/** Reader options for `pipeline`: its dialect, the columns it reads and its record limit. */
export function readOptionsFor(pipeline: PipelineConfig): ReadOptions {
  return {
    csv: pipeline.source.csv,
    required: requiredColumns(pipeline),
    maxRecordBytes: pipeline.source.maxRecordBytes,
  };
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * Reads records from `input`.
 * @returns an async iterable of records; for CSV the header line is consumed, not yielded
 * @throws SourceRefused when a CSV input's header is unreadable, names a column twice or misses a column the pipeline reads,
 *   or when the input starts with a UTF-16 or UTF-32 byte order mark (before any record is read)
 */
export async function* readRecords(
  input: AsyncIterable<Buffer | string>,
  format: SourceFormat,
  opts: ReadOptions = {},
): AsyncGenerator<RawRecord> {
  const max = opts.maxRecordBytes ?? MAX_RECORD_BYTES;
  const dialect = opts.csv ?? DEFAULT_CSV_DIALECT;
  const parseOptions = csvParseOptions(dialect);
  const position = opts.position ?? { offset: opts.startOffset ?? 0, line: (opts.firstLine ?? 1) - 1 };
  let columns = opts.header;
  // A CSV record of several lines in progress (a quoted field spans lines, RFC 4180): its first line, its text so far
  // with each line end as it was, its bytes so far, the line end of its last line. Past maxRecordBytes it is `skipping`:
  // its text is cut to the limit and its lines are read only to know where its quote closes, so no text inside a field
  // is ever read as a record.
  let pending: { line: number; raw: string; bytes: number; eol: string; skipping: boolean } | undefined;
  const lines = splitLines(input, {
    maxBytes: max,
    unterminated: opts.unterminated ?? "record",
    startOffset: opts.startOffset,
    firstLine: opts.firstLine,
    onChunk: opts.onChunk,
  });
  const done = (l: SplitLine) => {
    position.offset = l.endOffset;
    position.line = l.line;
  };
  const tooLong = (line: number, raw: string): RawRecord => ({
    line,
    raw,
    fields: null,
    parseError: `longer than ${max} bytes`,
  });

  for await (const batch of lines)
    for (const l of batch) {
      let bytes = l.bytes;
      if (l.line === 1 && (opts.startOffset ?? 0) === 0) {
        const encoding = notUtf8(bytes);
        if (encoding !== undefined) throw new SourceRefused(encoding);
        if (bytes.subarray(0, 3).equals(BOM)) bytes = bytes.subarray(3);
      }
      if (pending !== undefined) {
        // Inside a quoted field that spans lines: this line continues the record.
        const text = bytes.toString("utf8");
        pending.bytes += pending.eol.length + l.length;
        if (!pending.skipping && (l.tooLong || pending.bytes > max)) {
          pending.skipping = true;
          pending.raw = utf8Prefix(Buffer.from(pending.raw + pending.eol + text, "utf8"), max);
        } else if (!pending.skipping) pending.raw += pending.eol + text;
        pending.eol = l.eol;
        // A line longer than the limit was read in part: where its quote closes is not known, so the record ends with it.
        if (!l.tooLong && quoteOpenAtEnd(text, dialect, true)) continue;
        const rec = pending;
        pending = undefined;
        done(l);
        if (rec.skipping) {
          yield {
            line: rec.line,
            raw: rec.raw,
            fields: null,
            parseError: `longer than ${max} bytes (a quoted field spanning lines ${rec.line}-${l.line})`,
          };
          continue;
        }
        const problem = textProblem(rec.raw);
        yield problem === undefined
          ? csvRecord(rec.line, rec.raw, columns!, parseOptions, dialect)
          : { line: rec.line, raw: rec.raw, fields: null, parseError: problem };
        continue;
      }
      if (l.tooLong) {
        if (format === "csv" && columns === undefined)
          throw new SourceRefused(`CSV header (line ${l.line}) is longer than ${max} bytes`);
        const raw = utf8Prefix(bytes, max);
        if (format === "csv" && quoteOpenAtEnd(raw, dialect, false)) {
          // Its quoted field goes on past the line: the lines up to its closing quote are the same record.
          pending = { line: l.line, raw, bytes: l.length, eol: l.eol, skipping: true };
          continue;
        }
        done(l);
        yield tooLong(l.line, raw);
        continue;
      }
      const text = bytes.toString("utf8");
      if (
        text.trim() === "" ||
        (format === "csv" && dialect.comment !== undefined && text.startsWith(dialect.comment))
      ) {
        done(l);
        continue;
      }
      const problem = textProblem(text);
      if (format === "csv" && columns === undefined) {
        const parsed = problem === undefined ? csvFields(text, parseOptions) : { error: problem };
        if (!Array.isArray(parsed))
          throw new SourceRefused(`CSV header (line ${l.line}) is unreadable: ${parsed.error}`);
        columns = csvColumns(parsed, l.line, opts.required ?? [], dialect.headerCase);
        opts.onHeader?.(columns, text);
        done(l);
        continue;
      }
      if (format === "jsonl") {
        done(l);
        if (problem !== undefined) {
          yield { line: l.line, raw: text, fields: null, parseError: problem };
          continue;
        }
        const parsed = jsonFields(text);
        yield "error" in parsed
          ? { line: l.line, raw: text, fields: null, parseError: parsed.error }
          : { line: l.line, raw: text, ...parsed };
        continue;
      }
      if (quoteOpenAtEnd(text, dialect, false)) {
        // A quoted field that spans lines (RFC 4180): the record goes on until its quote closes.
        pending = { line: l.line, raw: text, bytes: l.length, eol: l.eol, skipping: false };
        continue;
      }
      done(l);
      yield problem === undefined
        ? csvRecord(l.line, text, columns!, parseOptions, dialect)
        : { line: l.line, raw: text, fields: null, parseError: problem };
    }
  if (pending !== undefined && (opts.unterminated ?? "record") === "record") {
    // Its quote never closed: one record, MALFORMED, its text kept up to the limit.
    yield {
      line: pending.line,
      raw: pending.raw,
      fields: null,
      parseError: "a quoted field is not closed at the end of the input",
    };
  }
}

/** Why a CSV record of several lines is not read under `dialect`: `multiline: false` refuses quoted fields that span lines. */
const SPANS_LINES = "a quoted field spans lines (source.csv.multiline: false)";

function csvRecord(
  line: number,
  text: string,
  columns: CsvColumns,
  parseOptions: ReturnType<typeof csvParseOptions>,
  dialect: CsvDialect,
): RawRecord {
  if (!dialect.multiline && /[\r\n]/.test(text)) return { line, raw: text, fields: null, parseError: SPANS_LINES };
  // Without a quote character (and without trim) a record is its text split on the
  // delimiter, exactly what csv-parse returns for it: that case skips the parser.
  const values =
    !dialect.trim && !text.includes(dialect.quote) ? text.split(dialect.delimiter) : csvFields(text, parseOptions);
  if (!Array.isArray(values)) return { line, raw: text, fields: null, parseError: values.error };
  const mapped = csvRecordFields(values, columns);
  return "error" in mapped
    ? { line, raw: text, fields: null, parseError: mapped.error }
    : { line, raw: text, fields: mapped.fields };
}

/**
 * A recorded CSV header line (`straggler.source_headers`) as the columns the
 * readers map records by, under `opts` (dialect, columns the pipeline reads).
 * @throws SourceRefused when it is unreadable, names a column twice or misses a column the pipeline reads
 */
export function headerColumns(header: string, opts: ReadOptions): CsvColumns {
  const names = csvFields(header, csvParseOptions(opts.csv ?? DEFAULT_CSV_DIALECT));
  if (!Array.isArray(names)) throw new SourceRefused(`CSV header is unreadable: ${names.error}`);
  return csvColumns(names, 1, opts.required ?? [], (opts.csv ?? DEFAULT_CSV_DIALECT).headerCase);
}

/**
 * One stored record's text (bronze `raw`) read again as the readers read it:
 * a JSON line, or a CSV record by its source's header (`columns`, from
 * `headerColumns`; null when none was recorded: the record is not readable).
 * For a rebuild (src/lifecycle/rebuildClassify.ts); `line` is the record's line number.
 */
export function storedRecord(
  text: string,
  line: number,
  format: SourceFormat,
  csv: CsvDialect | undefined,
  columns: CsvColumns | null,
): RawRecord {
  const problem = textProblem(text);
  if (problem !== undefined) return { line, raw: text, fields: null, parseError: problem };
  if (format === "jsonl") {
    const parsed = jsonFields(text);
    return "error" in parsed
      ? { line, raw: text, fields: null, parseError: parsed.error }
      : { line, raw: text, ...parsed };
  }
  if (columns === null)
    return { line, raw: text, fields: null, parseError: "the CSV header of its source was not recorded" };
  const dialect = csv ?? DEFAULT_CSV_DIALECT;
  return csvRecord(line, text, columns, csvParseOptions(dialect), dialect);
}
