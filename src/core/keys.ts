/**
 * Group keys: how a record's key fields become the one text stored in
 * `group_key` (bronze, results, late windows, audit), and how the null group
 * is stored and shown. Pure; the SQL side is `straggler.key_out(text)`
 * (migration 0012), the only place SQL decodes a stored key.
 *
 * Rules (as SQL's GROUP BY and Spark group them):
 * - a key field that is absent, JSON `null`, or an empty CSV field (quoted or
 *   not: CSV has no null) is null; a JSON `""` is the empty string, its own group;
 * - one key field: the field's text; null is the null group;
 * - several key fields: the JSON array text of the values, a null staying
 *   `null` (`[null,"x"]`, distinct from `["","x"]`);
 * - no key fields: every record is in the group `""`;
 * - a JSON number (not a string) is written in its canonical form
 *   (`canonicalNumber`: `7.0` → `7`), so one number is one key; strings,
 *   CSV fields included, are kept verbatim (`"7.0"` stays `7.0`).
 *
 * Storage: `group_key` is `text NOT NULL` (the results' key and every join
 * on it stay plain index equality), so the null group of a one-field key is
 * stored as `NULL_KEY`, a text admission never lets into a key (it contains
 * the Unicode noncharacter U+FFFF; a key field holding U+FFFF is MALFORMED).
 * Every read-model view shows it as SQL NULL, the REST API and CLI as JSON
 * `null`.
 */
import { canonicalNumber } from "./decimal.js";

/** The stored text of the null group (one key field whose value is null or absent). Decoded by `straggler.key_out`. */
export const NULL_KEY = "\uFFFF";

/** A key field value: its text, or null when absent, JSON null or an empty CSV field. */
function keyValue(
  fields: Record<string, string | null>,
  field: string,
  numbers: readonly string[] | undefined,
): string | null {
  const v = fields[field];
  if (v === null || v === undefined) return null;
  return numbers !== undefined && numbers.includes(field) ? canonicalNumber(v) : v;
}

/**
 * The stored group key of a record (see the module's rules).
 * @param numbers names of the fields whose JSON value was a number (canonicalised); absent for CSV
 * @returns `""` without key fields (or without fields), `NULL_KEY` for a null one-field key
 */
export function groupKeyOf(
  fields: Record<string, string | null> | null,
  keyFields: string[],
  numbers?: readonly string[],
): string {
  if (keyFields.length === 0 || fields === null) return "";
  if (keyFields.length === 1) return keyValue(fields, keyFields[0]!, numbers) ?? NULL_KEY;
  return JSON.stringify(keyFields.map((f) => keyValue(fields, f, numbers)));
}

/** The key fields of a record that are null (absent, JSON null, empty CSV field), in configured order. */
export function nullKeyFields(fields: Record<string, string | null>, keyFields: string[]): string[] {
  return keyFields.filter((f) => fields[f] === null || fields[f] === undefined);
}

/** True when a key field's text contains U+FFFF, reserved for `NULL_KEY`: such a record is MALFORMED. */
export function holdsReservedKeyText(fields: Record<string, string | null>, keyFields: string[]): boolean {
  return keyFields.some((f) => fields[f]?.includes(NULL_KEY) === true);
}

/** A stored key as clients see it: `NULL_KEY` → null. */
export function keyOut(stored: string): string | null {
  return stored === NULL_KEY ? null : stored;
}

/** A key as a client names it (null = the null group) → its stored text. */
export function keyIn(key: string | null): string {
  return key === null ? NULL_KEY : key;
}
