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
});
