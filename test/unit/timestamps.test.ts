import { describe, expect, it } from "vitest";
import { isValidTimeZone, parseInstant, type InstantResult } from "../../src/core/timestamps.js";
import { assignWindows } from "../../src/core/windows.js";

const HOUR = 3_600_000;
const ok = (ms: number): InstantResult => ({ ok: true, ms });
const iso = (raw: string, timeZone?: string) => parseInstant(raw, "iso8601", timeZone);
/** The instant as ISO UTC, or the refusal detail prefixed by "ERR ". */
const show = (r: InstantResult) => (r.ok ? new Date(r.ms).toISOString() : `ERR ${r.detail}`);

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
    expect(iso("2024-05-01 12:00:00")).toEqual({ ok: false, detail: "timestamp has no zone and the pipeline configures no timeZone" });
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
    expect(est.ms - edt.ms).toBe(HOUR);
    const hourly = { sizeMs: HOUR, slideMs: HOUR, offsetMs: 0 };
    expect(assignWindows(edt.ms, hourly)).toEqual([{ startMs: Date.UTC(2020, 10, 1, 5), endMs: Date.UTC(2020, 10, 1, 6) }]);
    expect(assignWindows(est.ms, hourly)).toEqual([{ startMs: Date.UTC(2020, 10, 1, 6), endMs: Date.UTC(2020, 10, 1, 7) }]);
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
    for (const raw of ["2024-13-01T00:00:00Z", "2024-00-01T00:00:00Z", "2024-01-00T00:00:00Z", "2024-04-31T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T23:60:00Z", "2024-01-01T23:59:60Z"]) {
      expect(iso(raw).ok, raw).toBe(false);
    }
  });

  it("accepts years 0001 and 9999 and refuses 0000 and 10000", () => {
    expect(iso("0001-01-01T00:00:00Z")).toEqual(ok(-62_135_596_800_000));
    expect(iso("9999-12-31T23:59:59.999Z")).toEqual(ok(253_402_300_799_999));
    expect(iso("10000-01-01T00:00:00Z").ok).toBe(false);
    expect(iso("0000-12-31T23:59:59Z").ok).toBe(false);
    // An offset that pushes the instant outside 0001-9999 is refused too.
    expect(iso("0001-01-01T00:00:00+01:00")).toEqual({ ok: false, detail: "instant outside years 0001-9999" });
    expect(iso("9999-12-31T23:30:00-01:00")).toEqual({ ok: false, detail: "instant outside years 0001-9999" });
  });

  it("refuses a non-zero fraction finer than a millisecond, accepts trailing zeros", () => {
    expect(iso("2024-05-01T12:00:00.123000Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 123)));
    expect(iso("2024-05-01T12:00:00.123000000Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 123)));
    expect(iso("2024-05-01T12:00:00.1234Z")).toEqual({ ok: false, detail: "sub-millisecond precision is not supported" });
    expect(iso("2024-05-01T12:00:00.123000001Z").ok).toBe(false);
    expect(iso("2024-05-01T12:00:00.5Z")).toEqual(ok(Date.UTC(2024, 4, 1, 12, 0, 0, 500)));
  });

  it("refuses text that is not a timestamp", () => {
    for (const raw of ["", "yesterday", "2024-05-01T12", "2024/05/01 12:00:00Z", "1714564800", "2024-05-01T12:00:00Z trailing", "NaN"]) {
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
    expect(parseInstant("1700000000000.5", "epoch_ms", undefined)).toEqual({ ok: false, detail: "sub-millisecond precision is not supported" });
  });

  it("epoch_s: integers and fractional seconds down to the millisecond", () => {
    expect(parseInstant("1700000000", "epoch_s", undefined)).toEqual(ok(1_700_000_000_000));
    expect(parseInstant("1700000000.5", "epoch_s", undefined)).toEqual(ok(1_700_000_000_500));
    expect(parseInstant("1700000000.123", "epoch_s", undefined)).toEqual(ok(1_700_000_000_123));
    expect(parseInstant("1700000000.1230", "epoch_s", undefined)).toEqual(ok(1_700_000_000_123));
    expect(parseInstant("-1.5", "epoch_s", undefined)).toEqual(ok(-1_500));
    expect(parseInstant("1700000000.0005", "epoch_s", undefined)).toEqual({ ok: false, detail: "sub-millisecond precision is not supported" });
  });

  it("refuses garbage, NaN, exponents and out-of-range numbers", () => {
    for (const raw of ["", "abc", "NaN", "Infinity", "1e3", "0x10", "12abc", "1.2.3", "--1"]) {
      expect(parseInstant(raw, "epoch_ms", undefined).ok, raw).toBe(false);
      expect(parseInstant(raw, "epoch_s", undefined).ok, raw).toBe(false);
    }
    expect(parseInstant("NaN", "epoch_s", undefined)).toEqual({ ok: false, detail: 'not an epoch number: "NaN"' });
    expect(parseInstant("253402300800", "epoch_s", undefined)).toEqual({ ok: false, detail: "instant outside years 0001-9999" });
    expect(parseInstant("253402300799.999", "epoch_s", undefined)).toEqual(ok(253_402_300_799_999));
  });
});

describe("isValidTimeZone", () => {
  it("knows IANA names and refuses others", () => {
    expect(isValidTimeZone("UTC")).toBe(true);
    expect(isValidTimeZone("America/New_York")).toBe(true);
    expect(isValidTimeZone("Mars/Olympus_Mons")).toBe(false);
  });
});
