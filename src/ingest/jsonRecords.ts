/**
 * The `jsonl` reader's record: one JSON line parsed losslessly (`lossless-json`) into fields whose numbers
 * keep their exact text, nested values as canonical JSON text, its depth bounded before parsing.
 * src/ingest/readers.ts splits the lines; src/ingest/csvRecords.ts is the CSV counterpart.
 */
import { isLosslessNumber, parse as parseJson } from "lossless-json";
import { canonicalNumber } from "../core/decimal.js";

/**
 * A top-level JSON value as field text: null stays null, `""` stays `""` (a key of its own), numbers keep their exact text,
 * an object or array is its canonical JSON text (`canonicalJson`), so one nested value is one key or event id whatever
 * order its members were written in.
 */
function fieldText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === "string") return v;
  if (isLosslessNumber(v)) return v.toString();
  if (typeof v === "boolean") return String(v);
  return canonicalJson(v);
}

/**
 * The canonical JSON text of a parsed (lossless) JSON value: members of an object sorted by their names'
 * UTF-16 code units (the order of RFC 8785, JSON Canonicalization Scheme), numbers in their canonical decimal
 * form (`canonicalNumber`: `1.0` and `1e0` are `1`; exact, not through a double as RFC 8785 would), strings as
 * `JSON.stringify` writes them, no whitespace. `{"b":2,"a":1.0}` and `{"a":1,"b":2}` both give `{"a":1,"b":2}`.
 * Depth is bounded by the reader (`MAX_JSON_DEPTH`) before parsing.
 */
export function canonicalJson(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "boolean") return String(v);
  if (isLosslessNumber(v)) return canonicalNumber(v.toString());
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  const o = v as Record<string, unknown>;
  const names = Object.keys(o).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${names.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(",")}}`;
}

/**
 * Deepest nesting of JSON arrays and objects in a record (the record object is
 * level 1). The parser and serialiser recurse: without a limit, whether a deep
 * line parses would depend on the stack left, and a replay could classify it
 * differently.
 */
export const MAX_JSON_DEPTH = 1000;

/** True when `text` nests JSON arrays/objects deeper than `max` levels (strings skipped). Linear, no recursion. */
function jsonDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Parses one JSON line into fields, and the names of the fields whose value is
 * a JSON number (`numbers`, absent when none): a number used as a key or id is
 * canonicalised by admission, a string never is.
 */
export function jsonFields(
  line: string,
): { fields: Record<string, string | null>; numbers?: string[] } | { error: string } {
  if (jsonDeeperThan(line, MAX_JSON_DEPTH))
    return { error: `invalid JSON: nested deeper than ${MAX_JSON_DEPTH} levels` };
  let value: unknown;
  try {
    value = parseJson(line);
  } catch (e) {
    return { error: `invalid JSON: ${(e as Error).message.slice(0, 200)}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value) || isLosslessNumber(value))
    return { error: "expected a JSON object" };
  const fields: Record<string, string | null> = {};
  let numbers: string[] | undefined;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    fields[k] = fieldText(v);
    if (isLosslessNumber(v)) (numbers ??= []).push(k);
  }
  return numbers === undefined ? { fields } : { fields, numbers };
}
