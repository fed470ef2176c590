/**
 * Durations as Spark writes them (`"10 minutes"`, `"1 hour"`, `"30 seconds"`),
 * parsed by the `ms` library. Returns milliseconds.
 */
import ms from "ms";

/** Milliseconds in `text`, or undefined when `ms` cannot read it or it is negative. */
export function parseDuration(text: string): number | undefined {
  const value = ms(text.trim() as ms.StringValue);
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** Formats milliseconds the long way (`"10 minutes"`), for logs and the CLI. */
export function formatDuration(millis: number): string {
  return ms(millis, { long: true });
}
