/**
 * Readers turn a byte stream into `RawRecord`s, one per physical line, never
 * holding the whole input in memory. A line that is not a record becomes a
 * record with `fields: null` and a `parseError`; it never stops the input.
 *
 * - `jsonl`: one JSON object per line, parsed losslessly (`lossless-json`):
 *   numbers keep their exact text, so `0.1` stays `0.1` and `1e400` stays
 *   `1e400` for the decimal check to refuse.
 * - `csv`: a header line, then one record per line, read by header name with
 *   `csv-parse`. A record may not span lines (a quoted line break makes the
 *   line malformed); quoting, commas in quotes and CRLF are handled.
 *
 * Blank lines carry no record and are skipped. A UTF-8 BOM is removed.
 * Invalid UTF-8 (decoded as U+FFFD) and NUL bytes make a line malformed.
 */
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { parse as parseCsvLine } from "csv-parse/sync";
import { isLosslessNumber, parse as parseJson, stringify as stringifyJson } from "lossless-json";
import type { RawRecord } from "../core/admission.js";

export type SourceFormat = "csv" | "jsonl";

/** Lines longer than this (in UTF-16 code units) are quarantined, their raw text cut to this length. */
export const MAX_LINE_CHARS = 1_048_576;

function fieldText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === "string") return v === "" ? null : v;
  if (isLosslessNumber(v)) return v.toString();
  if (typeof v === "boolean") return String(v);
  return stringifyJson(v) ?? null;
}

function lineProblem(line: string): string | undefined {
  if (line.length > MAX_LINE_CHARS) return `line longer than ${MAX_LINE_CHARS} characters`;
  if (line.includes("\uFFFD")) return "invalid UTF-8";
  if (line.includes("\u0000")) return "contains a NUL character";
  return undefined;
}

/**
 * Deepest nesting of JSON arrays and objects in a record (the record object is
 * level 1). The parser and serialiser recurse: without a limit, whether a deep
 * line parses would depend on the stack left, and a replay could classify it
 * differently.
 */
export const MAX_JSON_DEPTH = 1000;

/** True when `text` nests JSON arrays/objects deeper than `max` levels (strings skipped). Linear, no recursion. */
export function jsonDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Parses one JSON line into fields. */
export function jsonFields(line: string): { fields: Record<string, string | null> } | { error: string } {
  if (jsonDeeperThan(line, MAX_JSON_DEPTH)) return { error: `invalid JSON: nested deeper than ${MAX_JSON_DEPTH} levels` };
  let value: unknown;
  try {
    value = parseJson(line);
  } catch (e) {
    return { error: `invalid JSON: ${(e as Error).message.slice(0, 200)}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value) || isLosslessNumber(value)) return { error: "expected a JSON object" };
  const fields: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) fields[k] = fieldText(v);
  return { fields };
}

/** Parses one CSV line into its field texts. */
export function csvFields(line: string): string[] | { error: string } {
  try {
    const rows = parseCsvLine(line, { relax_column_count: true }) as string[][];
    if (rows.length !== 1) return { error: "a CSV record may not span lines" };
    return rows[0]!;
  } catch (e) {
    return { error: `invalid CSV: ${(e as Error).message.slice(0, 200)}` };
  }
}

/**
 * Reads records from `input`.
 * @returns an async iterable of records; for CSV the header line is consumed, not yielded
 * @throws Error when a CSV input has no header line or a header with duplicate names
 */
export async function* readRecords(input: Readable, format: SourceFormat): AsyncGenerator<RawRecord> {
  const lines = createInterface({ input, crlfDelay: Infinity });
  let lineNo = 0;
  let header: string[] | undefined;
  for await (let line of lines) {
    lineNo++;
    if (lineNo === 1 && line.charCodeAt(0) === 0xfeff) line = line.slice(1);
    if (line.trim() === "") continue;
    const problem = lineProblem(line);
    if (format === "csv" && header === undefined) {
      const parsed = problem === undefined ? csvFields(line) : { error: problem };
      if (!Array.isArray(parsed)) throw new Error(`CSV header (line ${lineNo}) is unreadable: ${parsed.error}`);
      header = parsed.map((h) => h.trim());
      if (new Set(header).size !== header.length) throw new Error(`CSV header (line ${lineNo}) names a column twice`);
      continue;
    }
    const raw = problem === undefined ? line : line.slice(0, MAX_LINE_CHARS);
    if (problem !== undefined) {
      yield { line: lineNo, raw, fields: null, parseError: problem };
      continue;
    }
    if (format === "jsonl") {
      const parsed = jsonFields(line);
      yield "error" in parsed ? { line: lineNo, raw, fields: null, parseError: parsed.error } : { line: lineNo, raw, fields: parsed.fields };
      continue;
    }
    const values = csvFields(line);
    if (!Array.isArray(values)) {
      yield { line: lineNo, raw, fields: null, parseError: values.error };
    } else if (values.length !== header!.length) {
      yield { line: lineNo, raw, fields: null, parseError: `expected ${header!.length} fields, got ${values.length}` };
    } else {
      const fields: Record<string, string | null> = {};
      header!.forEach((h, i) => (fields[h] = values[i] === "" ? null : values[i]!));
      yield { line: lineNo, raw, fields };
    }
  }
}
