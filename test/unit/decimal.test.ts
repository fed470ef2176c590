import { describe, expect, it } from "vitest";
import { parseDecimal } from "../../src/core/decimal.js";

describe("parseDecimal", () => {
  it("accepts plain and exponent decimals unchanged (PostgreSQL does the arithmetic)", () => {
    expect(parseDecimal("9.75")).toEqual({ ok: true, value: "9.75" });
    expect(parseDecimal("-9.3")).toEqual({ ok: true, value: "-9.3" });
    expect(parseDecimal("0E-9")).toEqual({ ok: true, value: "0E-9" });
    expect(parseDecimal("1e3")).toEqual({ ok: true, value: "1e3" });
    expect(parseDecimal("+5")).toEqual({ ok: true, value: "+5" });
    expect(parseDecimal(".5")).toEqual({ ok: true, value: ".5" });
    expect(parseDecimal("5.")).toEqual({ ok: true, value: "5." });
    expect(parseDecimal("00012.50")).toEqual({ ok: true, value: "00012.50" });
    expect(parseDecimal("0.1")).toEqual({ ok: true, value: "0.1" });
  });

  it("trims surrounding whitespace", () => {
    expect(parseDecimal(" 9.75\t")).toEqual({ ok: true, value: "9.75" });
  });

  it("refuses NaN, Infinity, empty, hex and other non-decimals", () => {
    for (const raw of ["NaN", "nan", "Infinity", "-Infinity", "inf", "", "   ", "0x10", ".", "-", "e5", "1e", "1.2.3", "1,5", "12abc", "1_000"]) {
      expect(parseDecimal(raw).ok, JSON.stringify(raw)).toBe(false);
    }
    expect(parseDecimal("NaN")).toEqual({ ok: false, detail: 'not a decimal number: "NaN"' });
  });

  it("accepts 1e400: far beyond float8, but inside numeric's 131072 integer digits", () => {
    expect(parseDecimal("1e400")).toEqual({ ok: true, value: "1e400" });
    expect(parseDecimal("1e131071")).toEqual({ ok: true, value: "1e131071" }); // 131072 digits: the largest power of ten numeric holds
    expect(parseDecimal("1e-16383")).toEqual({ ok: true, value: "1e-16383" }); // 16383 digits after the point
  });

  it("refuses magnitudes outside numeric's range instead of clamping", () => {
    expect(parseDecimal("1e200000")).toEqual({ ok: false, detail: "outside PostgreSQL's numeric range: 1e200000" });
    expect(parseDecimal("1e131072").ok).toBe(false);
    expect(parseDecimal("10e131071").ok).toBe(false);
    expect(parseDecimal("1e-16384").ok).toBe(false);
    expect(parseDecimal("0.5e-16383").ok).toBe(false);
  });

  it("reads zero with any exponent as a zero numeric accepts", () => {
    expect(parseDecimal("0e-20000")).toEqual({ ok: true, value: "0" });
    expect(parseDecimal("0e200000")).toEqual({ ok: true, value: "0" });
    expect(parseDecimal("0e-16383")).toEqual({ ok: true, value: "0e-16383" });
    // Fraction digits count towards the scale too: numeric refuses '0.0e-16383' (scale 16384).
    expect(parseDecimal("0.0e-16383")).toEqual({ ok: true, value: "0" });
    expect(parseDecimal(`0.${"0".repeat(16384)}`)).toEqual({ ok: true, value: "0" });
    expect(parseDecimal(`0.${"0".repeat(16383)}`)).toEqual({ ok: true, value: `0.${"0".repeat(16383)}` });
  });
});
