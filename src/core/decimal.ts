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
  if (allZero && (Math.abs(exp) > MAX_FRAC_DIGITS || fracDigits - exp > MAX_FRAC_DIGITS)) return { ok: true, value: "0" };
  return { ok: true, value: text };
}
