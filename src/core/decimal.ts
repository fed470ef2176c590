/**
 * Strict decimal literals for `numeric` values. Node never does arithmetic on
 * values: they travel as strings and PostgreSQL sums them exactly.
 */

const DECIMAL = /^([+-]?)(\d+)?(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** PostgreSQL `numeric` limits: 131072 digits before the point, 16383 after. */
const MAX_INT_DIGITS = 131072;
const MAX_FRAC_DIGITS = 16383;

export type DecimalResult = { ok: true; value: string } | { ok: false; detail: string };

/**
 * Parses a decimal literal (`"9.75"`, `"-9.3"`, `"0E-9"`, `"1e3"`) into the
 * string PostgreSQL will store as `numeric`. Refuses `NaN`, `Infinity`, empty
 * strings, hex, and magnitudes outside PostgreSQL's `numeric` range. Never
 * rounds or clamps.
 */
export function parseDecimal(raw: string): DecimalResult {
  const text = raw.trim();
  const m = DECIMAL.exec(text);
  if (!m || (m[2] === undefined && (m[3] === undefined || m[3] === ""))) {
    return { ok: false, detail: `not a decimal number: ${JSON.stringify(raw.slice(0, 40))}` };
  }
  const intDigits = (m[2] ?? "").replace(/^0+/, "").length;
  const fracDigits = (m[3] ?? "").length;
  const exp = m[4] === undefined ? 0 : Number(m[4]);
  const allZero = /^0*$/.test((m[2] ?? "") + (m[3] ?? ""));
  if (!allZero && (intDigits + exp > MAX_INT_DIGITS || fracDigits - exp > MAX_FRAC_DIGITS)) {
    return { ok: false, detail: `outside PostgreSQL's numeric range: ${text.slice(0, 40)}` };
  }
  if (allZero && (Math.abs(exp) > MAX_FRAC_DIGITS || fracDigits - exp > MAX_FRAC_DIGITS))
    return { ok: true, value: "0" };
  return { ok: true, value: text };
}

/**
 * A decimal literal as `sign × digits × 10^exp`, `digits` without leading or
 * trailing zeros (`""` for zero, then `negative` is false). The exponent is a
 * bigint: a key's or id's text is not range-checked, and two exponents that
 * differ only beyond 2^53 must not read as one.
 */
export interface DecimalParts {
  negative: boolean;
  digits: string;
  exp: bigint;
}

/** Splits a decimal literal into `DecimalParts`; undefined when `text` is not one (see `parseDecimal`). */
export function decimalParts(text: string): DecimalParts | undefined {
  const m = DECIMAL.exec(text);
  if (!m || (m[2] === undefined && (m[3] === undefined || m[3] === ""))) return undefined;
  const frac = m[3] ?? "";
  const all = (m[2] ?? "") + frac;
  const lead = all.search(/[1-9]/);
  if (lead < 0) return { negative: false, digits: "", exp: 0n };
  let end = all.length;
  while (all.charCodeAt(end - 1) === 0x30) end--;
  const exp = (m[4] === undefined ? 0n : BigInt(m[4])) - BigInt(frac.length) + BigInt(all.length - end);
  return { negative: m[1] === "-", digits: all.slice(lead, end), exp };
}

/** Longest canonical number written in plain decimal notation; longer ones are written in scientific notation. */
const MAX_PLAIN_NUMBER_CHARS = 2048;

/**
 * The one text of a JSON number used as a group key or an event id, so that
 * `7`, `7.0`, `7.00` and `0.7e1` are one key and one id (values are never
 * canonicalised: their text, and so a sum's scale, is the producer's).
 *
 * Rule: plain decimal, no exponent, no leading zeros, no trailing fractional
 * zeros, no `+`, `-0` → `0` (`1.50E+2` → `150`, `-0.0` → `0`, `1e-3` →
 * `0.001`). A number whose plain form would be longer than
 * `MAX_PLAIN_NUMBER_CHARS` characters is written `d[.ddd]e<exp>` instead
 * (`1e5000`, `-1.5e-3000`): still one text per value, and never expanded into
 * megabytes. Returns `text` unchanged when it is not a decimal literal.
 */
export function canonicalNumber(text: string): string {
  if (/^(?:0|-?[1-9]\d*)$/.test(text)) return text; // the common case: an integer already canonical
  const p = decimalParts(text);
  if (p === undefined) return text;
  if (p.digits === "") return "0";
  const sign = p.negative ? "-" : "";
  const n = BigInt(p.digits.length);
  const plainLength = p.exp >= 0n ? n + p.exp : -p.exp >= n ? -p.exp + 2n : n + 1n;
  if (plainLength > BigInt(MAX_PLAIN_NUMBER_CHARS)) {
    const mantissa = p.digits.length === 1 ? p.digits : `${p.digits[0]}.${p.digits.slice(1)}`;
    return `${sign}${mantissa}e${p.exp + n - 1n}`;
  }
  const e = Number(p.exp),
    d = p.digits;
  if (e >= 0) return sign + d + "0".repeat(e);
  if (-e < d.length) return `${sign}${d.slice(0, d.length + e)}.${d.slice(d.length + e)}`;
  return `${sign}0.${"0".repeat(-e - d.length)}${d}`;
}

/** -1, 0 or 1 as |a| is less than, equal to or greater than |b|. */
export function compareAbs(a: DecimalParts, b: DecimalParts): number {
  if (a.digits === "" || b.digits === "") return a.digits === b.digits ? 0 : a.digits === "" ? -1 : 1;
  // Position of the leading digit decides; then the digits, left-aligned.
  const ma = BigInt(a.digits.length) + a.exp,
    mb = BigInt(b.digits.length) + b.exp;
  if (ma !== mb) return ma < mb ? -1 : 1;
  const len = Math.max(a.digits.length, b.digits.length);
  const da = a.digits.padEnd(len, "0"),
    db = b.digits.padEnd(len, "0");
  return da === db ? 0 : da < db ? -1 : 1;
}

/**
 * Largest `admission.maxAbsValue`. With every accepted |value| <= 1e131000, a
 * sum of up to 2^63 rows stays below 1e131019, inside numeric's 131072 integer
 * digits: no sum, average, minimum or maximum of accepted rows can overflow.
 */
export const MAX_ABS_VALUE_CEILING = "1e131000";

/**
 * Default `admission.maxAbsValue`: 1e38, the range of Spark's and most SQL engines' widest decimal
 * (`DECIMAL(38, s)`). It keeps every numeric of a window row short: a value has at most 39
 * integer digits, a sum of up to 2^63 of them at most 58, so with `MAX_FRACTION_DIGITS_DEFAULT`
 * each of sum, min, max and avg renders in under 100 characters and a window row in well
 * under 1 KB of JSON (README "Configuration"). The ceiling's 131,001-digit values made a row
 * of about 524 KB.
 */
export const MAX_ABS_VALUE_DEFAULT = "1e38";

/** Largest `admission.maxFractionDigits`: numeric's 16383 digits after the point. */
export const MAX_FRACTION_DIGITS_CEILING = MAX_FRAC_DIGITS;

/** Default `admission.maxFractionDigits`: 18, the scale of Spark's default `DecimalType(38, 18)`. */
export const MAX_FRACTION_DIGITS_DEFAULT = 18;

/**
 * The digits after the point that `text` (a literal `parseDecimal` accepted) is stored with as
 * `numeric`: its fraction's digits minus its exponent, trailing zeros included (`"1.50"`: 2,
 * `"1e-20"`: 20, `"12e3"`: 0), as PostgreSQL keeps the scale.
 */
export function fractionDigits(text: string): number {
  const m = DECIMAL.exec(text.trim());
  if (!m) return 0;
  return Math.max(0, (m[3] ?? "").length - (m[4] === undefined ? 0 : Number(m[4])));
}
