/**
 * The replay's check pass counts a file's records into spans of arrival time as it reads them, refusing a record
 * that goes back in time (src/replay/checkOrder.ts on records, src/replay/fastCheck.ts on bytes): one rule for both.
 */
import { spanStartOf } from "./spanSource.js";

/** A span as the check pass counted it: its start (epoch ms) and its records. */
export interface CheckedSpan {
  start: number;
  rows: number;
}

/** An arrival instant: [epoch ms, µs within the ms]. */
export type Arrival = [number, number];

/** Whether arrival `a` is before `b`. */
export const arrivesBefore = (a: Arrival, b: Arrival): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/** The spans of arrival time counted so far, in order, with the records' count and the first and last arrival. */
export class ArrivalSpans {
  readonly spans: CheckedSpan[] = [];
  total = 0;
  first: Arrival | null = null;
  last: Arrival | null = null;

  /**
   * @param spanMs span of arrival time, ms
   * @param onCount called every 10,000 records with the count so far
   */
  constructor(
    private readonly spanMs: number,
    private readonly onCount?: (n: number) => void,
  ) {}

  /** Counts the next record's arrival. @returns false when it goes back in time (nothing is counted) */
  add(arrival: Arrival): boolean {
    if (this.last !== null && arrivesBefore(arrival, this.last)) return false;
    this.first ??= arrival;
    this.last = arrival;
    const start = spanStartOf(arrival[0], this.spanMs)!;
    const tail = this.spans[this.spans.length - 1];
    if (tail === undefined || tail.start !== start) this.spans.push({ start, rows: 1 });
    else tail.rows++;
    if (++this.total % 10_000 === 0) this.onCount?.(this.total);
    return true;
  }
}
