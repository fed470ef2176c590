import { describe, expect, it } from "vitest";
import { formatDuration, readDuration } from "../../src/config/duration.js";

const ms = (text: unknown) => {
  const r = readDuration(text);
  if (!r.ok) throw new Error(r.message);
  return r.ms;
};
const refusal = (text: unknown) => {
  const r = readDuration(text);
  if (r.ok) throw new Error(`expected ${JSON.stringify(text)} to be refused, got ${r.ms} ms`);
  return r.message;
};

describe("durations read as Spark's CalendarInterval strings", () => {
  it.each([
    ["10 minutes", 600_000],
    ["1 minute", 60_000],
    ["1 minute 30 seconds", 90_000],
    ["interval 2 hours", 7_200_000],
    ["INTERVAL 1 Hour 30 Minutes", 5_400_000],
    ["1 hour 30 minutes", 5_400_000],
    ["500 milliseconds", 500],
    ["1 millisecond", 1],
    ["2000 microseconds", 2],
    ["1.5 seconds", 1_500],
    [".25 seconds", 250],
    ["0.001 second", 1],
    ["1.000000 seconds", 1_000],
    ["+5 seconds", 5_000],
    ["1 day", 86_400_000],
    ["2 weeks", 1_209_600_000],
    ["1 week 1 day", 691_200_000],
    ["0 seconds", 0],
    ["  10   seconds  ", 10_000],
    ["1 hour 1 hour", 7_200_000],
  ])("%j is %d ms", (text, expected) => {
    expect(ms(text)).toBe(expected);
  });

  it.each([
    ["10", 'a number without a unit: write "10 seconds" (or minutes, hours, ...)'],
    [10, 'a number without a unit: write "10 seconds" (or minutes, hours, ...)'],
    ["1 minute 30", 'a number without a unit: write "30 seconds" (or minutes, hours, ...)'],
    ["1 year", 'years have no fixed length: write a fixed length such as "365 days"'],
    ["2 months", 'months have no fixed length: write a fixed length such as "30 days"'],
    ["interval 1 month 2 days", 'months have no fixed length: write a fixed length such as "30 days"'],
    ["10 min", 'unit "min" is not one Spark reads: write "10 minutes"'],
    ["30 sec", 'unit "sec" is not one Spark reads: write "30 seconds"'],
    ["500 ms", 'unit "ms" is not one Spark reads: write "500 milliseconds"'],
    ["2 h", 'unit "h" is not one Spark reads: write "2 hours"'],
    ["10s", 'write a space between the number and its unit: "10 seconds"'],
    ["5minutes", 'write a space between the number and its unit: "5 minutes"'],
    [
      "10 fortnights",
      'unknown unit "fortnights" in "10 fortnights": expected weeks, days, hours, minutes, seconds, milliseconds or microseconds',
    ],
    ["ten minutes", 'expected a duration like "10 minutes", got "ten minutes"'],
    ["-5 minutes", 'a duration is not negative: "-5 minutes"'],
    [
      "1.5 hours",
      'only seconds take a fraction (as in Spark): write "1.5 hours" in whole smaller units, e.g. "1 hour 30 minutes"',
    ],
    [
      "1.5 minutes",
      'only seconds take a fraction (as in Spark): write "1.5 minutes" in whole smaller units, e.g. "1 minute 30 seconds"',
    ],
    [
      "0.3 minutes",
      'only seconds take a fraction (as in Spark): write "0.3 minutes" in whole smaller units, e.g. "18 seconds"',
    ],
    ["1.0000001 hours", 'only seconds take a fraction (as in Spark): write "1.0000001 hours" in whole smaller units'],
    ["100 microseconds", 'durations are whole milliseconds: "100 microseconds" is not'],
    ["0.0001 seconds", 'durations are whole milliseconds: "0.0001 seconds" is not'],
    ["1.0000001 seconds", 'a fraction of a second finer than a microsecond: "1.0000001 seconds"'],
    ["", 'expected a duration like "10 minutes", got an empty text'],
    ["interval", 'expected a duration like "10 minutes", got an empty text'],
    [null, 'expected a duration like "10 minutes"'],
  ])("%j is refused", (text, message) => {
    expect(refusal(text)).toBe(message);
  });

  it("formats milliseconds in the same grammar", () => {
    expect(formatDuration(5_400_000)).toBe("1 hour 30 minutes");
    expect(formatDuration(21_600_000)).toBe("6 hours");
    expect(formatDuration(1_001)).toBe("1 second 1 millisecond");
    expect(formatDuration(0)).toBe("0 seconds");
    for (const n of [1, 999, 60_000, 90_061_001]) expect(ms(formatDuration(n))).toBe(n);
  });
});
