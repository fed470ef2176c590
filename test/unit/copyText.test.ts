import { describe, expect, it } from "vitest";
import { copyText, inChunks, inChunksOf } from "../../src/db/copyText.js";

describe("copyText (COPY's text format)", () => {
  it("returns plain values as they are, numbers as text, null as \\N", () => {
    expect([
      copyText("e530,2026-11-01T00:17:48.480Z,k66,164.98"),
      copyText(""),
      copyText(42),
      copyText(-0.5),
      copyText(null),
    ]).toEqual(["e530,2026-11-01T00:17:48.480Z,k66,164.98", "", "42", "-0.5", "\\N"]);
  });

  it("escapes backslash, line feed, carriage return and tab, each occurrence, and writes a NUL as the six characters \\u0000", () => {
    expect(copyText("a\\b\nc\rd\te")).toBe("a\\\\b\\nc\\rd\\te");
    expect(copyText("\t\t\\\\")).toBe("\\t\\t\\\\\\\\");
    expect(copyText("x\u0000y")).toBe("x\\\\u0000y");
    // The same value twice in a row: the test regex keeps no state between calls.
    expect([copyText("p\nq"), copyText("p\nq"), copyText("plain")]).toEqual(["p\\nq", "p\\nq", "plain"]);
  });

  it("inChunks joins lines into chunks of at least chunkChars, each line after the prefix", async () => {
    async function* lines() {
      yield* ["a\n", "bb\n", "c\n"];
    }
    const chunks: string[] = [];
    for await (const c of inChunks(lines(), 8, "7\t")) chunks.push(c);
    expect(chunks).toEqual(["7\ta\n7\tbb\n", "7\tc\n"]);
    const plain: string[] = [];
    for await (const c of inChunks(lines(), 4)) plain.push(c);
    expect(plain).toEqual(["a\nbb\n", "c\n"]);
  });

  it("inChunksOf gives lines in memory the same chunks as inChunks", () => {
    expect([...inChunksOf(["a\n", "bb\n", "c\n"], 8, "7\t")]).toEqual(["7\ta\n7\tbb\n", "7\tc\n"]);
    expect([...inChunksOf(["a\n", "bb\n", "c\n"], 4)]).toEqual(["a\nbb\n", "c\n"]);
    expect([...inChunksOf([], 4)]).toEqual([]);
  });
});
