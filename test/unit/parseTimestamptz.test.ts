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
});
