/**
 * Admission's checks of a field's text (src/core/admission.ts classifies with them): a value's magnitude
 * against `admission.maxAbsValue`, and whether a group key or event id can be stored verbatim and indexed.
 */
import { compareAbs, decimalParts, type DecimalParts } from "./decimal.js";

/** `admission.maxAbsValue` as parts, and `shorter`: a value literal without exponent shorter than this is below it. */
interface Limit {
  parts: DecimalParts;
  shorter: number;
}
const limits = new Map<string, Limit>();
/** The limit of `text`, parsed once per distinct text (validated by the config schema: positive, at most 1e131000). */
export function limitOf(text: string): Limit {
  let limit = limits.get(text);
  if (limit === undefined) {
    const parts = decimalParts(text.trim())!;
    // limit >= 10^(m-1) with m its integer digits; a literal of fewer than m characters is below 10^(m-1).
    limits.set(text, (limit = { parts, shorter: Number(BigInt(parts.digits.length) + parts.exp) }));
  }
  return limit;
}

/** True when the decimal literal `v` (already valid) has a magnitude above `limit`. */
export function aboveLimit(v: string, limit: Limit): boolean {
  if (v.length < limit.shorter && !/[eE]/.test(v)) return false; // the common case, no parsing
  return compareAbs(decimalParts(v)!, limit.parts) > 0;
}

/**
 * Longest group key and event id, in UTF-8 bytes. Both are indexed (btree rows
 * hold at most ~2.7 kB): a longer one would fail its whole source's landing.
 */
const MAX_KEY_BYTES = 2048;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why `text` cannot be stored verbatim as a key or id: a NUL (PostgreSQL text
 * has none), a lone surrogate (from a JSON escape; it would be stored as
 * U+FFFD), or too many bytes for an index.
 */
export function unstorable(text: string, what: string): string | undefined {
  if (text.includes("\u0000")) return `${what} contains a NUL character`;
  if (LONE_SURROGATE.test(text)) return `${what} is not valid Unicode (lone surrogate)`;
  // At most 3 UTF-8 bytes per UTF-16 code unit: short strings need no count.
  if (text.length > MAX_KEY_BYTES / 3 && Buffer.byteLength(text, "utf8") > MAX_KEY_BYTES)
    return `${what} longer than ${MAX_KEY_BYTES} bytes (UTF-8)`;
  return undefined;
}
