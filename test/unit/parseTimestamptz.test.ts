import { describe, expect, it } from "vitest";
import { parseTimestamptz } from "../../src/db/pool.js";

describe("parseTimestamptz (PostgreSQL text → ISO 8601 UTC)", () => {
  it("reads ordinary, early, fractional, post-9999 and BC instants exactly", () => {
    expect(parseTimestamptz("2026-10-01 12:00:00+00")).toBe("2026-10-01T12:00:00.000Z");
    expect(parseTimestamptz("2026-10-01 12:00:00.5+00")).toBe("2026-10-01T12:00:00.500Z");
    expect(parseTimestamptz("0050-06-01 00:00:00+00")).toBe("0050-06-01T00:00:00.000Z");
    // The end of a window that starts in 9999 and the start of one before year 1.
    expect(parseTimestamptz("10000-01-01 00:09:59+00")).toBe("+010000-01-01T00:09:59.000Z");
    expect(parseTimestamptz("0001-12-31 23:50:00+00 BC")).toBe("0000-12-31T23:50:00.000Z");
  });

  it("keeps microseconds: 6 fraction digits when the µs part is not zero, 3 otherwise", () => {
    expect(parseTimestamptz("2024-01-15 12:09:59.999999+00")).toBe("2024-01-15T12:09:59.999999Z");
    expect(parseTimestamptz("2024-01-15 12:00:00.000001+00")).toBe("2024-01-15T12:00:00.000001Z");
    expect(parseTimestamptz("2024-01-15 12:00:00.12345+00")).toBe("2024-01-15T12:00:00.123450Z");
    expect(parseTimestamptz("2024-01-15 12:00:00.123+00")).toBe("2024-01-15T12:00:00.123Z");
    expect(parseTimestamptz("1969-12-31 23:59:59.999999+00")).toBe("1969-12-31T23:59:59.999999Z");
    expect(parseTimestamptz("0001-01-01 00:00:00.000001+00")).toBe("0001-01-01T00:00:00.000001Z");
    expect(parseTimestamptz("9999-12-31 23:59:59.999999+00")).toBe("9999-12-31T23:59:59.999999Z");
    expect(parseTimestamptz("10000-01-01 00:00:00.000001+00")).toBe("+010000-01-01T00:00:00.000001Z");
    expect(parseTimestamptz("0001-12-31 23:59:59.500001+00 BC")).toBe("0000-12-31T23:59:59.500001Z");
    expect(parseTimestamptz("2024-01-15 17:30:00.000001+05:30")).toBe("2024-01-15T12:00:00.000001Z");
  });

  it("a UTC session's text (the fast path) reads as the general path reads it: every fraction length, offsets other than +00 and BC years the general way", () => {
    // The general path's answer, by Date and the µs digits, for a +00 text with a four-digit year.
    const general = (v: string) => {
      const [date, rest] = v.split(" ");
      const [time, fraction = ""] = rest!.replace("+00", "").split(".");
      const iso = new Date(`${date}T${time}.${fraction.slice(0, 3).padEnd(3, "0")}Z`).toISOString();
      const micro = fraction.slice(3, 6).padEnd(3, "0");
      return micro === "000" ? iso : `${iso.slice(0, -1)}${micro}Z`;
    };
    const texts: string[] = [];
    for (const date of ["0001-01-01", "0099-03-01", "2000-02-29", "1969-12-31", "2024-02-29", "9999-12-31"])
      for (const time of ["00:00:00", "12:34:56", "23:59:59"])
        for (const fraction of ["", ".1", ".12", ".123", ".1234", ".12345", ".123456", ".000001", ".100000", ".999999"])
          texts.push(`${date} ${time}${fraction}+00`);
    expect(texts.map(parseTimestamptz)).toEqual(texts.map(general));
    expect(parseTimestamptz("2024-01-15 12:00:00.5+00")).toBe("2024-01-15T12:00:00.500Z");
    expect(parseTimestamptz("2024-01-15 12:00:00.000500+00")).toBe("2024-01-15T12:00:00.000500Z");
    // Not the fast path's form: the general path.
    expect(parseTimestamptz("2024-01-15 12:00:00-01")).toBe("2024-01-15T13:00:00.000Z");
    expect(parseTimestamptz("0001-12-31 23:50:00+00 BC")).toBe("0000-12-31T23:50:00.000Z");
    expect(parseTimestamptz("10000-01-01 00:09:59+00")).toBe("+010000-01-01T00:09:59.000Z");
  });
});
