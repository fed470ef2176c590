/**
 * A window's aggregates computed exactly from its values' decimal text (src/core/windowHistory.ts):
 * count, sum, min and max as the window's MERGE computes them in PostgreSQL — a sum's scale is
 * the largest of its terms' (as `sum(numeric)`), min and max keep their value's text.
 */
import type { Aggregates } from "./historyTypes.js";

const scaleOf = (v: string) => (v.includes(".") ? v.length - v.indexOf(".") - 1 : 0);
const scaled = (v: string, scale: number) => BigInt((v.includes(".") ? v.replace(".", "") : v) + "0".repeat(scale - scaleOf(v)));

function formatScaled(n: bigint, scale: number): string {
  if (scale === 0) return n.toString();
  const neg = n < 0n;
  const digits = (neg ? -n : n).toString().padStart(scale + 1, "0");
  return `${neg ? "-" : ""}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** Count, exact sum, min and max of `values` (nulls counted, not summed), as the window's MERGE computes them. */
export function aggregate(values: readonly (string | null)[]): Aggregates {
  const nums = values.filter((v): v is string => v !== null);
  if (nums.length === 0) return { count: values.length, sum: null, min: null, max: null };
  const scale = Math.max(...nums.map(scaleOf));
  let sum = 0n;
  let min = nums[0]!;
  let max = nums[0]!;
  const cmp = (a: string, b: string) => {
    const s = Math.max(scaleOf(a), scaleOf(b));
    const d = scaled(a, s) - scaled(b, s);
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  };
  for (const v of nums) {
    sum += scaled(v, scale);
    if (cmp(v, min) < 0) min = v;
    if (cmp(v, max) > 0) max = v;
  }
  return { count: values.length, sum: formatScaled(sum, scale), min, max };
}
