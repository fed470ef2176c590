/**
 * A window's aggregates computed exactly from its values' decimal text (src/core/windowHistory.ts):
 * count, sum, min and max as the window's MERGE computes them in PostgreSQL — a sum's scale is
 * the largest of its terms' (as `sum(numeric)`), min and max keep their value's text.
 */
import type { Aggregates } from "./historyTypes.js";

const scaleOf = (v: string) => (v.includes(".") ? v.length - v.indexOf(".") - 1 : 0);
const scaled = (v: string, scale: number) =>
  BigInt((v.includes(".") ? v.replace(".", "") : v) + "0".repeat(scale - scaleOf(v)));

/** `n` × 10^-`scale` as PostgreSQL writes a numeric of that scale (`-1.50` for -150n at 2). */
export function formatScaled(n: bigint, scale: number): string {
  if (scale === 0) return n.toString();
  const neg = n < 0n;
  const digits = (neg ? -n : n).toString().padStart(scale + 1, "0");
  return `${neg ? "-" : ""}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

const compare = (a: string, b: string) => {
  const s = Math.max(scaleOf(a), scaleOf(b));
  const d = scaled(a, s) - scaled(b, s);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
};

/** Aggregates built one value at a time (a window's rows in the order a stream adds them). */
export class RunningAggregate {
  private count = 0;
  private scale = 0;
  private sum = 0n;
  private min: string | null = null;
  private max: string | null = null;

  /** Adds a value (null: counted, not summed). */
  add(v: string | null): void {
    this.count++;
    if (v === null) return;
    const s = scaleOf(v);
    if (s > this.scale) {
      this.sum *= 10n ** BigInt(s - this.scale);
      this.scale = s;
    }
    this.sum += scaled(v, this.scale);
    if (this.min === null || compare(v, this.min) < 0) this.min = v;
    if (this.max === null || compare(v, this.max) > 0) this.max = v;
  }

  /** The aggregates so far. */
  value(): Aggregates {
    return {
      count: this.count,
      sum: this.min === null ? null : formatScaled(this.sum, this.scale),
      min: this.min,
      max: this.max,
    };
  }
}

/** Count, exact sum, min and max of `values` (nulls counted, not summed), as the window's MERGE computes them. */
export function aggregate(values: readonly (string | null)[]): Aggregates {
  const a = new RunningAggregate();
  for (const v of values) a.add(v);
  return a.value();
}
