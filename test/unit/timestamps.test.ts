import { describe, expect, it } from "vitest";
import { formatInstant, isoToUs } from "../../src/core/instants.js";
import { parseInstant, type InstantResult, type TimestampFormat } from "../../src/core/timestamps.js";
import { isValidTimeZone } from "../../src/core/timeZones.js";
import { assignWindows } from "../../src/core/windows.js";

const HOUR = 3_600_000;
/** An accepted instant given in epoch ms (plus µs within the ms). */
const ok = (ms: number, micro = 0): InstantResult => ({ ok: true, us: BigInt(ms) * 1000n + BigInt(micro) });
const iso = (raw: string, timeZone?: string) => parseInstant(raw, "iso8601", timeZone);
/** The instant as ISO UTC, or the refusal detail prefixed by "ERR ". */
const show = (r: InstantResult) => (r.ok ? formatInstant(r.us) : `ERR ${r.detail}`);

describe("parseInstant iso8601: zones and offsets", () => {
  it("reads Z (either case)", () => {
    expect(iso("2024-05-01T12:10:00Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 10)));
    expect(iso("2024-05-01T12:10:00.250z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 10, 0, 250)));
    expect(iso("2024-05-01 12:10Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 10)));
  });

  it("reads offsets as +HH:MM, -HHMM and +HH", () => {
    expect(show(iso("2024-05-01T12:00:00+05:30"))).toBe("2024-05-01T06:30:00.000Z");
    expect(show(iso("2024-05-01T12:00:00-0400"))).toBe("2024-05-01T16:00:00.000Z");
    expect(show(iso("2024-05-01T12:00:00+01"))).toBe("2024-05-01T11:00:00.000Z");
    expect(show(iso("2024-05-01T12:00:00-00:00"))).toBe("2024-05-01T12:00:00.000Z");
  });

  it("an explicit offset wins over the configured time zone", () => {
    expect(show(iso("2024-05-01T12:00:00+02:00", "America/New_York"))).toBe("2024-05-01T10:00:00.000Z");
    expect(show(iso("2024-05-01T12:00:00Z", "Asia/Kolkata"))).toBe("2024-05-01T12:00:00.000Z");
  });

  it("refuses malformed offsets", () => {
    expect(iso("2024-05-01T12:00:00+1").ok).toBe(false);
    expect(iso("2024-05-01T12:00:00+19:00")).toEqual({ ok: false, detail: "offset out of range: +19:00" });
    expect(iso("2024-05-01T12:00:00+05:60")).toEqual({ ok: false, detail: "offset out of range: +05:60" });
  });
});

describe("parseInstant iso8601: zone-less strings", () => {
  it("reads them in the configured zone", () => {
    expect(show(iso("2024-05-01 12:00:00", "UTC"))).toBe("2024-05-01T12:00:00.000Z");
    expect(show(iso("2024-05-01T12:00:00", "America/New_York"))).toBe("2024-05-01T16:00:00.000Z"); // EDT, -4
    expect(show(iso("2024-01-15T12:00:00", "America/New_York"))).toBe("2024-01-15T17:00:00.000Z"); // EST, -5
    expect(show(iso("2024-05-01", "UTC"))).toBe("2024-05-01T00:00:00.000Z");
  });

  it("refuses them when no time zone is configured", () => {
    expect(iso("2024-05-01 12:00:00")).toEqual({
      ok: false,
      detail: "timestamp has no zone and the pipeline configures no timeZone",
    });
    expect(iso("2024-05-01", undefined).ok).toBe(false);
  });

  it("refuses a local time in the DST spring-forward gap", () => {
    expect(iso("2020-03-08 02:30:00", "America/New_York")).toEqual({
      ok: false,
      detail: "local time does not exist in America/New_York (DST gap): 2020-03-08 02:30:00",
    });
    expect(iso("2020-03-08 02:00:00", "America/New_York").ok).toBe(false);
    // The gap's edges exist.
    expect(show(iso("2020-03-08 01:59:59.999", "America/New_York"))).toBe("2020-03-08T06:59:59.999Z");
    expect(show(iso("2020-03-08 03:00:00", "America/New_York"))).toBe("2020-03-08T07:00:00.000Z");
  });

  it("resolves an ambiguous fall-back local time to the earlier instant", () => {
    expect(show(iso("2020-11-01 01:30:00", "America/New_York"))).toBe("2020-11-01T05:30:00.000Z");
    expect(show(iso("2020-10-25 01:30:00", "Europe/London"))).toBe("2020-10-25T00:30:00.000Z");
  });

  it("uses the zone's historical (LMT) offset before standard time", () => {
    expect(show(iso("1800-01-01 00:00:00", "America/New_York"))).toBe("1800-01-01T04:56:02.000Z");
  });
});

describe("parseInstant iso8601: DST fall-back with explicit offsets", () => {
  it("01:30-04:00 and 01:30-05:00 are one hour apart and fall in distinct 1-hour windows", () => {
    const edt = iso("2020-11-01T01:30:00-04:00");
    const est = iso("2020-11-01T01:30:00-05:00");
    expect(edt).toEqual(ok(Date.UTC(2020, 10, 1, 5, 30)));
    expect(est).toEqual(ok(Date.UTC(2020, 10, 1, 6, 30)));
    if (!edt.ok || !est.ok) throw new Error("unreachable");
    expect(est.us - edt.us).toBe(BigInt(HOUR) * 1000n);
    const hourly = { sizeMs: HOUR, slideMs: HOUR, offsetMs: 0 };
    const us = (ms: number) => BigInt(ms) * 1000n;
    expect(assignWindows(edt.us, hourly)).toEqual([
      { startUs: us(Date.UTC(2020, 10, 1, 5)), endUs: us(Date.UTC(2020, 10, 1, 6)) },
    ]);
    expect(assignWindows(est.us, hourly)).toEqual([
      { startUs: us(Date.UTC(2020, 10, 1, 6)), endUs: us(Date.UTC(2020, 10, 1, 7)) },
    ]);
  });
});

describe("parseInstant iso8601: calendar and range", () => {
  it("accepts 29 February in a leap year and refuses it otherwise", () => {
    expect(show(iso("2020-02-29T00:00:00Z"))).toBe("2020-02-29T00:00:00.000Z");
    expect(iso("2021-02-29T00:00:00Z")).toEqual({ ok: false, detail: "no such date: 2021-02-29" });
    expect(iso("1900-02-29T00:00:00Z").ok).toBe(false); // not a leap year
    expect(show(iso("2000-02-29T00:00:00Z"))).toBe("2000-02-29T00:00:00.000Z");
  });

  it("refuses out-of-range fields", () => {
    for (const raw of [
      "2024-13-01T00:00:00Z",
      "2024-00-01T00:00:00Z",
      "2024-01-00T00:00:00Z",
      "2024-04-31T00:00:00Z",
      "2024-01-01T24:00:00Z",
      "2024-01-01T23:60:00Z",
      "2024-01-01T23:59:60Z",
    ]) {
      expect(iso(raw).ok, raw).toBe(false);
    }
  });

  it("accepts years 0001 and 9999 and refuses 0000 and 10000", () => {
    expect(iso("0001-01-01T00:00:00Z")).toEqual(ok(-62_135_596_800_000));
    expect(iso("9999-12-31T23:59:59.999Z")).toEqual(ok(253_402_300_799_999));
    expect(iso("9999-12-31T23:59:59.999999Z")).toEqual({ ok: true, us: 253_402_300_799_999_999n });
    expect(iso("0001-01-01T00:00:00.000001Z")).toEqual({ ok: true, us: -62_135_596_799_999_999n });
    expect(iso("10000-01-01T00:00:00Z").ok).toBe(false);
    expect(iso("0000-12-31T23:59:59Z").ok).toBe(false);
    // An offset that pushes the instant outside 0001-9999 is refused too.
    expect(iso("0001-01-01T00:00:00+01:00")).toEqual({ ok: false, detail: "instant outside years 0001-9999" });
    expect(iso("9999-12-31T23:30:00-01:00")).toEqual({ ok: false, detail: "instant outside years 0001-9999" });
  });

  it("keeps microseconds exactly; a non-zero fraction finer than a microsecond is refused by default", () => {
    expect(iso("2024-05-01T12:00:00.123000Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 123)));
    expect(iso("2024-05-01T12:00:00.123000000Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 123)));
    expect(iso("2024-05-01T12:00:00.1234Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 123), 400));
    expect(iso("2024-05-01T12:00:00.123456Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 123), 456));
    expect(iso("2024-05-01T12:00:00.123456000Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 123), 456));
    expect(iso("2024-05-01T12:00:00.123000001Z")).toEqual({
      ok: false,
      detail: "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)",
    });
    expect(iso("2024-05-01T12:00:00.1234567Z")).toEqual({
      ok: false,
      detail: "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)",
    });
    expect(iso("2024-05-01T12:00:00.5Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 500)));
    // Any length: zeros after the sixth digit are accepted (numpy's picoseconds write 12 digits).
    expect(iso("2024-05-01T12:00:00.123456000000Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 123), 456));
    expect(iso("2024-05-01T12:00:00.000000000001Z")).toEqual({
      ok: false,
      detail: "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)",
    });
  });

  it("subMicrosecond: truncate drops the digits after the microsecond", () => {
    expect(parseInstant("2024-05-01T12:00:00.123456789Z", "iso8601", undefined, "truncate")).toEqual(
      ok(Date.UTC(2024, 4, 1, 12, 0, 0, 123), 456),
    );
    expect(parseInstant("2024-01-15T12:09:59.9999999Z", "iso8601", undefined, "truncate")).toEqual(
      ok(Date.UTC(2024, 0, 15, 12, 9, 59, 999), 999),
    );
    expect(parseInstant("1700000000123456789", "epoch_ns", undefined, "truncate")).toEqual(ok(1_700_000_000_123, 456));
    expect(parseInstant("-1.0000005", "epoch_s", undefined, "truncate")).toEqual({ ok: true, us: -1_000_001n }); // the µs it falls in: toward the past, as ISO 8601's
    expect(parseInstant("1700000000.1234567", "epoch_s", undefined, "refuse")).toEqual({
      ok: false,
      detail: "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)",
    });
  });

  it("one instant finer than a microsecond is refused or truncated alike in ISO 8601 and every epoch form, number or string", () => {
    const SUB_US = { ok: false, detail: "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)" };
    // 2024-01-15T12:03:00.9876543Z, written six ways; truncated, each is 12:03:00.987654Z exactly.
    const after: Array<[string, TimestampFormat]> = [
      ["2024-01-15T12:03:00.9876543Z", "iso8601"],
      ["2024-01-15T13:03:00,98765430+01:00", "iso8601"],
      ["1705320180.9876543", "epoch_s"],
      ["1705320180987.6543", "epoch_ms"],
      ["1705320180987654.3", "epoch_us"],
      ["1705320180987654300", "epoch_ns"],
    ];
    for (const [text, format] of after) {
      expect(parseInstant(text, format, undefined), text).toEqual(SUB_US);
      expect(parseInstant(text, format, undefined, "truncate"), text).toEqual({ ok: true, us: 1_705_320_180_987_654n });
    }
    // Before 1970: 1969-12-31T23:59:59.9999995Z is -0.0000005 s; both keep the microsecond it falls in, …59.999999Z (-1 µs).
    const before: Array<[string, TimestampFormat]> = [
      ["1969-12-31T23:59:59.9999995Z", "iso8601"],
      ["-0.0000005", "epoch_s"],
      ["-0.0005", "epoch_ms"],
      ["-0.5", "epoch_us"],
      ["-500", "epoch_ns"],
    ];
    for (const [text, format] of before) {
      expect(parseInstant(text, format, undefined), text).toEqual(SUB_US);
      expect(parseInstant(text, format, undefined, "truncate"), text).toEqual({ ok: true, us: -1n });
    }
    expect(parseInstant("-1.0000000", "epoch_s", undefined)).toEqual({ ok: true, us: -1_000_000n }); // zeros are exact, never moved
    expect(parseInstant("-62135596800.0000001", "epoch_s", undefined, "truncate")).toEqual({
      ok: false,
      detail: "instant outside years 0001-9999",
    });
    expect(parseInstant("-62135596800.0000000", "epoch_s", undefined)).toEqual({
      ok: true,
      us: -62_135_596_800_000_000n,
    });
  });

  it("refuses text that is not a timestamp", () => {
    for (const raw of [
      "",
      "yesterday",
      "2024-05-01T12",
      "2024/05/01 12:00:00Z",
      "1714564800",
      "2024-05-01T12:00:00Z trailing",
      "NaN",
    ]) {
      expect(iso(raw, "UTC").ok, raw).toBe(false);
    }
  });
});

describe("parseInstant epoch formats", () => {
  it("epoch_ms: integers, negatives, and a zero fraction", () => {
    expect(parseInstant("1700000000000", "epoch_ms", undefined)).toEqual(ok(1_700_000_000_000));
    expect(parseInstant("-1", "epoch_ms", undefined)).toEqual(ok(-1));
    expect(parseInstant(" 12 ", "epoch_ms", undefined)).toEqual(ok(12));
    expect(parseInstant("1700000000000.000", "epoch_ms", undefined)).toEqual(ok(1_700_000_000_000));
    expect(parseInstant("1700000000000.5", "epoch_ms", undefined)).toEqual(ok(1_700_000_000_000, 500));
    expect(parseInstant("1700000000000.123", "epoch_ms", undefined)).toEqual(ok(1_700_000_000_000, 123));
    expect(parseInstant("1700000000000.1234", "epoch_ms", undefined)).toEqual({
      ok: false,
      detail: "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)",
    });
    expect(parseInstant("-0.001", "epoch_ms", undefined)).toEqual({ ok: true, us: -1n });
  });

  it("epoch_s: integers and fractional seconds down to the microsecond (Python's time.time())", () => {
    expect(parseInstant("1705320599.999999", "epoch_s", undefined)).toEqual({ ok: true, us: 1_705_320_599_999_999n });
    expect(parseInstant("1700000000.0005", "epoch_s", undefined)).toEqual(ok(1_700_000_000_000, 500));
    expect(parseInstant("1700000000", "epoch_s", undefined)).toEqual(ok(1_700_000_000_000));
    expect(parseInstant("1700000000.5", "epoch_s", undefined)).toEqual(ok(1_700_000_000_500));
    expect(parseInstant("1700000000.123", "epoch_s", undefined)).toEqual(ok(1_700_000_000_123));
    expect(parseInstant("1700000000.1230", "epoch_s", undefined)).toEqual(ok(1_700_000_000_123));
    expect(parseInstant("-1.5", "epoch_s", undefined)).toEqual(ok(-1_500));
    expect(parseInstant("1700000000.0000005", "epoch_s", undefined)).toEqual({
      ok: false,
      detail: "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)",
    });
  });

  it("epoch_us and epoch_ns", () => {
    expect(parseInstant("1705320599999999", "epoch_us", undefined)).toEqual({ ok: true, us: 1_705_320_599_999_999n });
    expect(parseInstant("-1", "epoch_us", undefined)).toEqual({ ok: true, us: -1n });
    expect(parseInstant("253402300799999999", "epoch_us", undefined)).toEqual({
      ok: true,
      us: 253_402_300_799_999_999n,
    });
    expect(parseInstant("253402300800000000", "epoch_us", undefined)).toEqual({
      ok: false,
      detail: "instant outside years 0001-9999",
    });
    expect(parseInstant("1.000", "epoch_us", undefined)).toEqual({ ok: true, us: 1n });
    expect(parseInstant("1.5", "epoch_us", undefined)).toEqual({
      ok: false,
      detail: "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)",
    });
    expect(parseInstant("1705320599999999000", "epoch_ns", undefined)).toEqual({
      ok: true,
      us: 1_705_320_599_999_999n,
    });
    expect(parseInstant("1705320599999999001", "epoch_ns", undefined)).toEqual({
      ok: false,
      detail: "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)",
    });
    expect(parseInstant("999", "epoch_ns", undefined, "truncate")).toEqual({ ok: true, us: 0n });
    expect(parseInstant("-5000", "epoch_ns", undefined)).toEqual({ ok: true, us: -5n });
  });

  it("refuses garbage, NaN, exponents and out-of-range numbers", () => {
    for (const raw of ["", "abc", "NaN", "Infinity", "1e3", "0x10", "12abc", "1.2.3", "--1"]) {
      expect(parseInstant(raw, "epoch_ms", undefined).ok, raw).toBe(false);
      expect(parseInstant(raw, "epoch_s", undefined).ok, raw).toBe(false);
    }
    expect(parseInstant("NaN", "epoch_s", undefined)).toEqual({ ok: false, detail: 'not an epoch number: "NaN"' });
    expect(parseInstant("253402300800", "epoch_s", undefined)).toEqual({
      ok: false,
      detail: "instant outside years 0001-9999",
    });
    expect(parseInstant("253402300799.999", "epoch_s", undefined)).toEqual(ok(253_402_300_799_999));
  });
});

describe('parseInstant iso8601: the forms table (README "Timestamps")', () => {
  const noon = "2024-01-15T12:00:00.000Z";
  it.each([
    ["2024-01-15T12:00:00Z", noon],
    ["2024-01-15t12:00:00z", noon],
    ["2024-01-15 12:00:00Z", noon],
    ["2024-01-15T12:00Z", noon],
    ["2024-01-15T12:00:00.000000Z", noon],
    ["2024-01-15T12:00:00,5Z", "2024-01-15T12:00:00.500Z"],
    ["2024-01-15T12:00:00.123456Z", "2024-01-15T12:00:00.123456Z"],
    ["2024-01-15T12:00:00.123456+00:00", "2024-01-15T12:00:00.123456Z"], // Python isoformat() of an aware datetime
    ["2024-01-15 12:00:00.123456+00", "2024-01-15T12:00:00.123456Z"], // PostgreSQL text output
    ["2024-01-15T13:00:00+01:00", noon],
    ["2024-01-15T13:00:00+0100", noon],
    ["2024-01-15T13:00:00+01", noon],
    ["2024-01-15T06:30:00-05:30", noon],
    ["2024-01-15T12:00:00-00:00", noon],
    ["2024-01-15T12:00:00 +00:00", noon],
    ["2024-01-15 12:00:00 UTC", noon],
    ["2024-01-15 12:00:00 GMT", noon],
    ["2024-01-15 12:00:00.123456 utc", "2024-01-15T12:00:00.123456Z"],
    ["2024-01-15T12:00:00UTC", noon],
    ["  2024-01-15T12:00:00Z\t", noon],
  ])("accepts %j as %s", (raw, expected) => {
    expect(show(iso(raw))).toBe(expected);
  });

  it.each([
    [
      "2024-01-15T23:59:60Z",
      "a leap second (:60) has no instant of its own (PostgreSQL and POSIX time have none): 2024-01-15T23:59:60Z",
    ],
    [
      "2024-W03-1T12:00:00Z",
      'ISO week dates are not accepted: write a calendar date YYYY-MM-DD: "2024-W03-1T12:00:00Z"',
    ],
    ["2024W031", 'ISO week dates are not accepted: write a calendar date YYYY-MM-DD: "2024W031"'],
    [
      "2024-015T12:00:00Z",
      'ordinal dates (YYYY-DDD) are not accepted: write a calendar date YYYY-MM-DD: "2024-015T12:00:00Z"',
    ],
    [
      "20240115T120000Z",
      'the basic (compact) ISO 8601 form is not accepted: write YYYY-MM-DDTHH:MM:SS: "20240115T120000Z"',
    ],
    [
      "01/15/2024 12:00:00",
      'slashed or dotted dates are ambiguous (day and month order): write YYYY-MM-DD: "01/15/2024 12:00:00"',
    ],
    [
      "15.01.2024 12:00",
      'slashed or dotted dates are ambiguous (day and month order): write YYYY-MM-DD: "15.01.2024 12:00"',
    ],
    [
      "2024-01-15 12:00:00 EST",
      'zone abbreviations are ambiguous: write an offset such as +01:00, or Z: "2024-01-15 12:00:00 EST"',
    ],
    [
      "2024-01-15 12:00:00 CEST",
      'zone abbreviations are ambiguous: write an offset such as +01:00, or Z: "2024-01-15 12:00:00 CEST"',
    ],
    [
      "+002024-01-15T12:00:00Z",
      'expanded years (+YYYYYY) are not accepted: years are 0001-9999: "+002024-01-15T12:00:00Z"',
    ],
    ["2024-01-15T12:00:00 Europe/Paris", 'not an ISO 8601 timestamp: "2024-01-15T12:00:00 Europe/Paris"'],
    ["2024-01-15T12:00:00+1", 'not an ISO 8601 timestamp: "2024-01-15T12:00:00+1"'],
    ["2024-01-15T12:00:00+05:30:00", 'not an ISO 8601 timestamp: "2024-01-15T12:00:00+05:30:00"'],
    ["2024-01-15T24:00:00Z", "field out of range: 2024-01-15T24:00:00Z"],
    ["2024-01-15T12:00:00.1234567890Z", "a fraction finer than a microsecond (timestamps.subMicrosecond: refuse)"],
    ["2024-01-15T12:00:00+19:00", "offset out of range: +19:00"],
  ])("refuses %j", (raw, detail) => {
    expect(iso(raw, "UTC")).toEqual({ ok: false, detail });
  });
});

describe("formatInstant and isoToUs", () => {
  it("write 3 fraction digits when the microseconds are zero, 6 otherwise, and read them back", () => {
    for (const [us, text] of [
      [0n, "1970-01-01T00:00:00.000Z"],
      [1n, "1970-01-01T00:00:00.000001Z"],
      [-1n, "1969-12-31T23:59:59.999999Z"],
      [1_705_320_599_999_999n, "2024-01-15T12:09:59.999999Z"],
      [1_705_320_600_000_000n, "2024-01-15T12:10:00.000Z"],
      [1_705_320_600_120_000n, "2024-01-15T12:10:00.120Z"],
      [253_402_300_799_999_999n, "9999-12-31T23:59:59.999999Z"],
      [253_402_300_800_000_000n, "+010000-01-01T00:00:00.000Z"],
      [-62_135_596_800_000_001n, "0000-12-31T23:59:59.999999Z"],
    ] as const) {
      expect(formatInstant(us)).toBe(text);
      expect(isoToUs(text)).toBe(us);
    }
  });
});

describe("isValidTimeZone", () => {
  it("knows IANA names and refuses others", () => {
    expect(isValidTimeZone("UTC")).toBe(true);
    expect(isValidTimeZone("America/New_York")).toBe(true);
    expect(isValidTimeZone("Mars/Olympus_Mons")).toBe(false);
  });
});

describe("parseInstant iso8601: the UTC form read without the general path", () => {
  // A leading space makes parseInstant trim and take its general path: both paths must answer alike.
  const general = (s: string) => parseInstant(` ${s}`, "iso8601", undefined);
  it("answers as the general path for every fraction length, edge dates and refusals", () => {
    const texts = [
      "2026-11-01T00:00:00Z",
      "2026-11-01T00:00:00.1Z",
      "2026-11-01T00:00:00.12Z",
      "2026-11-01T00:00:00.123Z",
      "2026-11-01T00:00:00.1234Z",
      "2026-11-01T00:00:00.12345Z",
      "2026-11-01T23:59:59.999999Z",
      "2024-02-29T12:00:00.000Z",
      "2023-02-29T12:00:00.000Z",
      "2000-02-29T00:00:00Z",
      "1900-02-29T00:00:00Z",
      "2026-04-31T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-11-01T24:00:00Z",
      "2026-11-01T00:60:00Z",
      "2026-11-01T23:59:60Z",
      "2026-11-01T00:00:00.Z",
      "0100-01-01T00:00:00Z",
      "0099-12-31T23:59:59Z",
      "9999-12-31T23:59:59.999999Z",
      "1969-12-31T23:59:59.999999Z",
      "2026-11-01T00:00:00.1234567Z",
      "2026-11-01T00:00:0aZ",
      "2026-11-01t00:00:00Z",
      "2026-11-01T00:00:00z",
    ];
    for (const s of texts) expect(parseInstant(s, "iso8601", undefined), s).toEqual(general(s));
    expect(parseInstant("2026-11-01T00:00:00.12Z", "iso8601", undefined)).toEqual({
      ok: true,
      us: 1_793_491_200_120_000n,
    });
  });
  it("reads back what formatInstant writes, as the general path does", () => {
    let x = 12345;
    for (let i = 0; i < 2000; i++) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      const us = BigInt(x) * 1_000_003n * (i % 2 === 0 ? 1n : 13n) - 2_000_000_000_000_000n;
      const text = formatInstant(us);
      expect(parseInstant(text, "iso8601", undefined)).toEqual({ ok: true, us });
      expect(general(text)).toEqual({ ok: true, us });
    }
  });
  it("formatInstant writes what Date's toISOString writes, with the µs after it", () => {
    let x = 777;
    const min = Date.UTC(-1, 0, 1),
      max = Date.UTC(10001, 0, 1);
    for (let i = 0; i < 5000; i++) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      // Spread over years -1 to 10000, and close together (the same day twice in a row).
      const ms = i % 3 === 2 ? Date.UTC(2026, 10, 1) + (x % DAY) : min + Math.floor((x / 2 ** 31) * (max - min));
      const micro = x % 1000;
      const want = new Date(ms).toISOString();
      expect(formatInstant(BigInt(ms) * 1000n + BigInt(micro))).toBe(
        micro === 0 ? want : `${want.slice(0, -1)}${String(micro).padStart(3, "0")}Z`,
      );
    }
  });
});
const DAY = 86_400_000;
