import { describe, expect, it } from "vitest";
import { canonicalNumber, compareAbs, decimalParts, parseDecimal } from "../../src/core/decimal.js";

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
    for (const raw of [
      "NaN",
      "nan",
      "Infinity",
      "-Infinity",
      "inf",
      "",
      "   ",
      "0x10",
      ".",
      "-",
      "e5",
      "1e",
      "1.2.3",
      "1,5",
      "12abc",
      "1_000",
    ]) {
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

describe("canonicalNumber (keys and ids)", () => {
  it("writes one plain decimal per value: no exponent, no leading or trailing zeros, -0 is 0", () => {
    const cases: Array<[string, string]> = [
      ["7", "7"],
      ["7.0", "7"],
      ["7.00", "7"],
      ["0.7e1", "7"],
      ["70e-1", "7"],
      ["-7.0", "-7"],
      ["-0", "0"],
      ["-0.0e5", "0"],
      ["0e-999999999999999999999", "0"],
      ["1.50E+2", "150"],
      ["1e-3", "0.001"],
      ["-12.340", "-12.34"],
      ["007", "7"],
      ["1e3", "1000"],
      ["123456789012345678901234567890", "123456789012345678901234567890"],
    ];
    for (const [text, canonical] of cases) expect(canonicalNumber(text), text).toBe(canonical);
  });

  it("bounds the expansion: a plain form longer than 2048 characters is written d.ddde<exp>, still one text per value", () => {
    expect(canonicalNumber("1e2047")).toBe("1" + "0".repeat(2047));
    expect(canonicalNumber("1e2048")).toBe("1e2048");
    expect(canonicalNumber("10e2047")).toBe("1e2048");
    expect(canonicalNumber("-1.50e999999999999")).toBe("-1.5e999999999999");
    expect(canonicalNumber("1e-3000")).toBe("1e-3000");
    expect(canonicalNumber("1e100000000000000000001")).toBe("1e100000000000000000001");
    expect(canonicalNumber("1e100000000000000000000")).toBe("1e100000000000000000000");
  });
});

describe("compareAbs", () => {
  const cmp = (a: string, b: string) => compareAbs(decimalParts(a)!, decimalParts(b)!);
  it("orders magnitudes exactly, sign ignored", () => {
    expect([
      cmp("1e38", "100000000000000000000000000000000000000"),
      cmp("-1e38", "1e38"),
      cmp("100000000000000000000000000000000000000.1", "1e38"),
      cmp("9.99e37", "1e38"),
      cmp("0", "1e-9"),
      cmp("0.0", "-0"),
    ]).toEqual([0, 0, 1, -1, -1, 0]);
  });
});
