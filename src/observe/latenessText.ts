/**
 * Lateness durations for people: shortened to their two largest units (`9m 47s`, `2d 7h`), as the
 * lateness report (`straggler lateness`, src/cli/latenessText.ts) and the UI pages write them.
 */

const UNITS: [string, number][] = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1_000],
  ["ms", 1],
];

/** `ms` (may be fractional or negative) as its two largest units, e.g. `1h 30m`, `950ms`, `-2m 5s`; `-` for null. */
export function shortDuration(ms: number | null): string {
  if (ms === null) return "-";
  if (ms < 0) return `-${shortDuration(-ms)}`;
  let rest = Math.round(ms);
  const parts: string[] = [];
  for (const [unit, size] of UNITS) {
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n > 0 || parts.length > 0) parts.push(`${n}${unit}`);
    if (parts.length === 2) break;
  }
  return parts.filter((p, i) => i === 0 || !p.startsWith("0")).join(" ") || "0s";
}
