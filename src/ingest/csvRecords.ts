/**
 * CSV: the header, the dialect (`source.csv`, mapped onto csv-parse's
 * options) and the mapping of a record's values to the header's names.
 *
 * Header rules:
 * - names are trimmed; an empty name is spreadsheet-export padding (an
 *   "unnamed column"), ignored as long as its values are empty;
 * - a name given twice is refused, naming it (`headerCase: insensitive`
 *   compares names case-insensitively);
 * - every column the pipeline reads (event time, and event id, ingestion
 *   time, group key, value when configured) must be named, else the source is
 *   refused before any row lands, the message naming the missing columns and
 *   the ones present. With `headerCase: insensitive` `Event_Time` names
 *   `event_time`.
 *
 * Record rules: a value in an unnamed column, a missing named column, or an
 * extra non-empty value past the header make the record MALFORMED (a value
 * must never vanish in silence); extra empty values (trailing delimiters) are
 * ignored.
 */
import { parse as parseCsv, type Options as CsvParseOptions } from "csv-parse/sync";
import type { PipelineConfig } from "../config/pipelines.js";
import { SourceRefused } from "./errors.js";

export type CsvDialect = PipelineConfig["source"]["csv"];

export const DEFAULT_CSV_DIALECT: CsvDialect = {
  delimiter: ",",
  quote: '"',
  escape: '"',
  relaxQuotes: false,
  multiline: true,
  trim: false,
  headerCase: "exact",
};

/** A column a pipeline reads, and the config field that names it (`fields.eventTime`, …). */
export interface RequiredColumn {
  column: string;
  configField: string;
}

/** The columns `pipeline` reads from each record (for the CSV header check). */
export function requiredColumns(pipeline: PipelineConfig): RequiredColumn[] {
  const f = pipeline.fields;
  const out: RequiredColumn[] = [{ column: f.eventTime, configField: "fields.eventTime" }];
  if (f.eventId !== undefined) out.push({ column: f.eventId, configField: "fields.eventId" });
  if (f.ingestionTime !== undefined) out.push({ column: f.ingestionTime, configField: "fields.ingestionTime" });
  for (const k of f.groupKey) out.push({ column: k, configField: "fields.groupKey" });
  if (f.value !== undefined) out.push({ column: f.value, configField: "fields.value" });
  return out;
}

/** csv-parse options for one record of `dialect`. */
export function csvParseOptions(dialect: CsvDialect): CsvParseOptions {
  return {
    delimiter: dialect.delimiter,
    quote: dialect.quote,
    escape: dialect.escape,
    relax_quotes: dialect.relaxQuotes,
    trim: dialect.trim,
    relax_column_count: true,
  };
}

/**
 * Parses one record's text into its values.
 * @returns the values, or `{ error }` naming why the text is not one CSV record
 */
export function csvFields(
  text: string,
  options: CsvParseOptions = csvParseOptions(DEFAULT_CSV_DIALECT),
): string[] | { error: string } {
  try {
    const rows = parseCsv(text, options) as string[][];
    if (rows.length !== 1)
      return { error: "a CSV record may not span lines (set source.csv.multiline for quoted fields that do)" };
    return rows[0]!;
  } catch (e) {
    return { error: `invalid CSV: ${(e as Error).message.slice(0, 200)}` };
  }
}

/**
 * True when a quoted field is still open at the end of `text` (the record
 * continues on the next line). `open` says whether one was open at its start.
 * Only a quote at the start of a field opens quoting, as in csv-parse.
 */
export function quoteOpenAtEnd(text: string, dialect: CsvDialect, open: boolean): boolean {
  const { quote, escape, delimiter } = dialect;
  if (!open && !text.includes(quote)) return false;
  let inQuotes = open;
  let fieldStart = !open;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inQuotes) {
      if (c === escape && escape !== quote && (text[i + 1] === quote || text[i + 1] === escape)) i++;
      else if (c === quote) {
        if (escape === quote && text[i + 1] === quote) i++;
        else inQuotes = false;
      }
    } else if (text.startsWith(delimiter, i)) {
      fieldStart = true;
      i += delimiter.length - 1;
    } else if (fieldStart && c === quote) {
      inQuotes = true;
      fieldStart = false;
    } else if (!(fieldStart && dialect.trim && (c === " " || c === "\t"))) {
      fieldStart = false;
    }
  }
  return inQuotes;
}

/** The header's columns: a name per position, `null` for an unnamed (padding) column. */
export type CsvColumns = (string | null)[];

const list = (names: string[]) => names.map((n) => JSON.stringify(n)).join(", ");

/**
 * Checks a header and returns its columns.
 * @throws SourceRefused for a name given twice, or when a column the pipeline reads is not named
 */
export function csvColumns(
  names: string[],
  lineNo: number,
  required: RequiredColumn[],
  headerCase: CsvDialect["headerCase"],
): CsvColumns {
  const fold = (n: string) => (headerCase === "insensitive" ? n.toLowerCase() : n);
  const wanted = new Map(required.map((r) => [fold(r.column), r.column]));
  const seen = new Set<string>();
  const columns: CsvColumns = names.map((raw) => {
    const name = raw.trim();
    if (name === "") return null;
    if (seen.has(fold(name)))
      throw new SourceRefused(`CSV header (line ${lineNo}) names column ${JSON.stringify(name)} twice`);
    seen.add(fold(name));
    return wanted.get(fold(name)) ?? name;
  });
  const present = new Set(columns.filter((c): c is string => c !== null));
  const missing = required.filter((r) => !present.has(r.column));
  if (missing.length > 0) {
    const named = columns.filter((c): c is string => c !== null);
    const lower = new Set(named.map((n) => n.toLowerCase()));
    const hint =
      headerCase === "exact" && missing.every((m) => lower.has(m.column.toLowerCase()))
        ? "; they differ only in case: set source.csv.headerCase: insensitive"
        : "";
    throw new SourceRefused(
      `CSV header (line ${lineNo}) does not name the column(s) ${missing.map((m) => `${JSON.stringify(m.column)} (${m.configField})`).join(", ")}; ` +
        `it names: ${named.length > 0 ? list(named) : "nothing"}${hint}`,
    );
  }
  return columns;
}

/** Maps one record's values to fields by column name (empty values are null), or says why it is malformed. */
export function csvRecordFields(
  values: string[],
  columns: CsvColumns,
): { fields: Record<string, string | null> } | { error: string } {
  const fields: Record<string, string | null> = {};
  const n = Math.max(values.length, columns.length);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    const empty = v === undefined || v.trim() === "";
    if (i >= columns.length) {
      if (!empty) return { error: `expected ${columns.length} fields, got ${values.length}` };
      continue;
    }
    const col = columns[i]!;
    if (col === null) {
      if (!empty) return { error: `a value in column ${i + 1}, which the header leaves unnamed` };
      continue;
    }
    if (v === undefined) return { error: `expected ${columns.length} fields, got ${values.length}` };
    fields[col] = v === "" ? null : v;
  }
  return { fields };
}
