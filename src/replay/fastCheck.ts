/**
 * The replay's check pass (src/replay/checkOrder.ts) over a plain CSV file, on bytes: no record is made, only
 * the arrival field of each line is read. It decides only where the reader (src/ingest/readers.ts) would make
 * every line a record of exactly the header's fields: the default dialect (comma, double quote, no comment,
 * no trim), a header of named, distinct columns on the first line, and lines of ASCII without a quote, a CR or a
 * NUL, none longer than `source.maxRecordBytes`, none blank but the empty ones (which carry no record), each with
 * as many fields as the header names. Anywhere else it answers `undefined` and the full check reads the file.
 * Where it decides, it finds what the full check finds: the spans of arrival time with their records, the
 * arrival times parsed by the same `parseInstant`, and null (stage the file) for a record that goes back in time.
 */
import { isAscii } from "node:buffer";
import { open } from "node:fs/promises";
import type { PipelineConfig } from "../config/pipelines.js";
import { msOfUs, usOfMs } from "../core/instants.js";
import { parseInstant } from "../core/timestamps.js";
import { DEFAULT_CSV_DIALECT } from "../ingest/csvRecords.js";
import { headerColumns, MAX_RECORD_BYTES, readOptionsFor } from "../ingest/readers.js";
import { ArrivalSpans, type CheckedSpan } from "./arrivalSpans.js";

/** Bytes read at a time. */
const CHUNK = 4 * 2 ** 20;

const LF = 10,
  COMMA = 44;

/** Whether the file's dialect is the one this check reads: the default, commas and double quotes. */
function plainDialect(pipeline: PipelineConfig): boolean {
  const d = pipeline.source.csv;
  return (
    pipeline.source.format === "csv" &&
    d.delimiter === "," &&
    d.quote === DEFAULT_CSV_DIALECT.quote &&
    d.comment === undefined &&
    !d.trim
  );
}

/**
 * Checks `file` on bytes, when it can tell.
 * @param onCount called every 10,000 records with the count so far
 * @returns the spans and records (`header`: the header line's text), null when a record goes back in time, or
 *   undefined when the file is not one this check reads (the full check then decides)
 * @throws what reading the file throws
 */
export async function fastCheck(
  pipeline: PipelineConfig,
  file: string,
  arrivalField: string,
  spanMs: number,
  onCount?: (n: number) => void,
): Promise<{ spans: CheckedSpan[]; total: number; header: string } | null | undefined> {
  if (!plainDialect(pipeline)) return undefined;
  const max = pipeline.source.maxRecordBytes ?? MAX_RECORD_BYTES;
  const { format, timeZone, subMicrosecond } = pipeline.timestamps;
  const fh = await open(file, "r");
  try {
    let buf = Buffer.alloc(CHUNK);
    let held = 0; // bytes of an unfinished line kept at the start of `buf`
    let header: string | undefined;
    let fields = 0,
      at = -1;
    const counted = new ArrivalSpans(spanMs, onCount);
    /** One line (without its LF); false when the check cannot tell. */
    const line = (from: number, to: number): boolean | null => {
      if (to - from > max) return false;
      if (header === undefined) {
        header = buf.toString("latin1", from, to);
        if (header.trim() === "") return false;
        let columns;
        try {
          columns = headerColumns(header, readOptionsFor(pipeline));
        } catch {
          return false; // refused: the full check reports it
        }
        if (columns.includes(null)) return false;
        fields = columns.length;
        at = columns.indexOf(arrivalField);
        return at >= 0;
      }
      if (to === from) return true; // an empty line: no record
      let field = 0,
        start = from,
        end = -1;
      for (let p = from; ;) {
        const c = buf.indexOf(COMMA, p);
        const stop = c < 0 || c >= to ? to : c;
        if (field === at) {
          start = p;
          end = stop;
        }
        field++;
        if (stop === to) break;
        p = stop + 1;
      }
      if (field !== fields || end <= start) return false;
      const text = buf.toString("latin1", start, end);
      if (text.trim() === "") return false; // a line of blanks carries no record, or a field of blanks no time: the full check says
      const parsed = parseInstant(text, format, timeZone, subMicrosecond);
      if (!parsed.ok) return false;
      const ms = msOfUs(parsed.us);
      return counted.add([ms, Number(parsed.us - usOfMs(ms))]) ? true : null;
    };
    for (;;) {
      if (held === buf.length) {
        if (buf.length > 2 * max + CHUNK) return undefined;
        buf = Buffer.concat([buf, Buffer.alloc(CHUNK)]);
      }
      const { bytesRead } = await fh.read(buf, held, buf.length - held, null);
      const end = held + bytesRead;
      const region = buf.subarray(held, end);
      // ASCII without a quote, a CR or a NUL: every line is its fields split on commas.
      if (!isAscii(region) || region.includes(34) || region.includes(13) || region.includes(0)) return undefined;
      let from = 0;
      for (;;) {
        const nl = buf.indexOf(LF, from);
        if (nl < 0 || nl >= end) break;
        const ok = line(from, nl);
        if (ok === null) return null;
        if (!ok) return undefined;
        from = nl + 1;
      }
      if (bytesRead === 0) {
        // The last line, without a newline: a record too.
        if (from < end) {
          const ok = line(from, end);
          if (ok === null) return null;
          if (!ok) return undefined;
        }
        if (header === undefined) return undefined;
        return { spans: counted.spans, total: counted.total, header };
      }
      buf.copy(buf, 0, from, end);
      held = end - from;
    }
  } finally {
    await fh.close();
  }
}
