/**
 * Durations as Spark writes them: the grammar of Spark's `CalendarInterval`
 * string parsing (`IntervalUtils.stringToInterval`, what `withWatermark` and
 * `window()` read), restricted to fixed lengths.
 *
 *   duration := ["interval"] term { term }
 *   term     := ["+"] digits ["." digits] unit      (a fraction only on seconds, as in Spark)
 *   unit     := week | day | hour | minute | second | millisecond | microsecond, each with an optional "s"
 *
 * Case-insensitive; terms are separated by whitespace and add up
 * (`1 hour 30 minutes`). A day is 24 hours and a week 7 days: instants are
 * UTC, so these are fixed lengths. Refused, each with a message saying what
 * to write: a number without a unit (`"10"`), a month or a year (no fixed
 * length), an abbreviation Spark does not read (`10 min`, `500 ms`), a
 * negative duration, a total that is not a whole number of milliseconds
 * (durations are applied in microseconds, but configured in whole ms), and a
 * total over 365000 days (`MAX_DURATION_DAYS`).
 */

export type DurationResult = { ok: true; ms: number } | { ok: false; message: string };

/** Microseconds per unit (Spark's unit names, singular). */
const UNIT_US: Record<string, bigint> = {
  week: 604_800_000_000n,
  day: 86_400_000_000n,
  hour: 3_600_000_000n,
  minute: 60_000_000n,
  second: 1_000_000n,
  millisecond: 1_000n,
  microsecond: 1n,
};

/** Abbreviations people write that Spark's parser does not read, with the word to write instead. */
const ABBREVIATIONS: Record<string, string> = {
  us: "microseconds",
  µs: "microseconds",
  μs: "microseconds",
  usec: "microseconds",
  usecs: "microseconds",
  ms: "milliseconds",
  msec: "milliseconds",
  msecs: "milliseconds",
  millis: "milliseconds",
  s: "seconds",
  sec: "seconds",
  secs: "seconds",
  m: "minutes",
  min: "minutes",
  mins: "minutes",
  h: "hours",
  hr: "hours",
  hrs: "hours",
  d: "days",
  w: "weeks",
  wk: "weeks",
  wks: "weeks",
  mo: "months",
  mon: "months",
  mons: "months",
  y: "years",
  yr: "years",
  yrs: "years",
};

const TERM = /^\+?(\d*)(?:\.(\d+))?$/;

function unitOf(word: string): string | undefined {
  const singular = word.endsWith("s") ? word.slice(0, -1) : word;
  if (singular in UNIT_US || singular === "month" || singular === "year") return singular;
  return undefined;
}

/**
 * The longest duration read, 1000 years of 365 days: an event time (years 1 to 9999) this far back
 * (a watermark delay) or ahead (a session gap) stays inside PostgreSQL's timestamps (4713 BC to
 * 294276 AD); a longer delay made every micro-batch fail on its watermark.
 */
const MAX_DURATION_DAYS = 365_000;
const MAX_DURATION_MS = MAX_DURATION_DAYS * 86_400_000;

/**
 * Reads a duration (see the module comment for the grammar).
 * @param input the configured text; a YAML number arrives as a number and is refused with a hint
 * @returns `{ ok: true, ms }` (whole milliseconds, >= 0) or `{ ok: false, message }`; never throws
 */
export function readDuration(input: unknown): DurationResult {
  const fail = (message: string): DurationResult => ({ ok: false, message });
  if (typeof input === "number")
    return fail(`a number without a unit: write "${input} seconds" (or minutes, hours, ...)`);
  if (typeof input !== "string") return fail('expected a duration like "10 minutes"');
  const words = input
    .trim()
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== "");
  if (words[0] === "interval") words.shift();
  if (words.length === 0) return fail('expected a duration like "10 minutes", got an empty text');
  let totalUs = 0n;
  for (let i = 0; i < words.length; i += 2) {
    const value = words[i]!,
      word = words[i + 1];
    if (value.startsWith("-")) return fail(`a duration is not negative: ${JSON.stringify(input)}`);
    const joined = /^(\+?\d+(?:\.\d+)?)([a-zµμ]+)$/.exec(value);
    if (joined)
      return fail(
        `write a space between the number and its unit: "${joined[1]} ${ABBREVIATIONS[joined[2]!] ?? joined[2]}"`,
      );
    const m = TERM.exec(value);
    if (!m || (m[1] === "" && m[2] === undefined))
      return fail(`expected a duration like "10 minutes", got ${JSON.stringify(input)}`);
    if (word === undefined) return fail(`a number without a unit: write "${value} seconds" (or minutes, hours, ...)`);
    const unit = unitOf(word);
    if (unit === undefined) {
      const hint = ABBREVIATIONS[word];
      return fail(
        hint
          ? `unit "${word}" is not one Spark reads: write "${value} ${hint}"`
          : `unknown unit "${word}" in ${JSON.stringify(input)}: expected weeks, days, hours, minutes, seconds, milliseconds or microseconds`,
      );
    }
    if (unit === "month" || unit === "year") {
      return fail(
        `${unit}s have no fixed length: write a fixed length such as "${unit === "month" ? "30 days" : "365 days"}"`,
      );
    }
    const [, whole, frac] = m;
    if (frac !== undefined && unit !== "second") {
      // The same length in whole smaller units, when it is whole milliseconds ("1.5 minutes" -> "1 minute 30 seconds").
      const us = BigInt(whole || "0") * UNIT_US[unit]! + (BigInt(frac) * UNIT_US[unit]!) / 10n ** BigInt(frac.length);
      const exact = (BigInt(frac) * UNIT_US[unit]!) % 10n ** BigInt(frac.length) === 0n && us % 1000n === 0n;
      const example = exact ? `, e.g. "${formatDuration(Number(us / 1000n))}"` : "";
      return fail(
        `only seconds take a fraction (as in Spark): write "${value} ${word}" in whole smaller units${example}`,
      );
    }
    totalUs += BigInt(whole || "0") * UNIT_US[unit]!;
    if (frac !== undefined) {
      if (/[1-9]/.test(frac.slice(6)))
        return fail(`a fraction of a second finer than a microsecond: ${JSON.stringify(input)}`);
      totalUs += BigInt(frac.slice(0, 6).padEnd(6, "0"));
    }
  }
  if (totalUs % 1000n !== 0n) return fail(`durations are whole milliseconds: ${JSON.stringify(input)} is not`);
  const ms = totalUs / 1000n;
  if (ms > BigInt(MAX_DURATION_MS))
    return fail(
      `duration too long: ${JSON.stringify(input)} (at most ${MAX_DURATION_DAYS} days: an event time this far back or ahead is outside PostgreSQL's timestamps)`,
    );
  return { ok: true, ms: Number(ms) };
}

const FORMAT_UNITS: [string, number][] = [
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
  ["second", 1_000],
  ["millisecond", 1],
];

/** Formats milliseconds the long way, in the same grammar (`"1 hour 30 minutes"`, `"0 seconds"`), for logs and the CLI. */
export function formatDuration(millis: number): string {
  const parts: string[] = [];
  let rest = Math.round(millis);
  for (const [name, size] of FORMAT_UNITS) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n} ${name}${n === 1 ? "" : "s"}`);
    rest -= n * size;
  }
  return parts.length === 0 ? "0 seconds" : parts.join(" ");
}
