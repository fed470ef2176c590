import { describe, expect, it } from "vitest";
import { splitLines, utf8Prefix, type SplitLine } from "../../src/ingest/lineSplitter.js";

async function split(
  chunks: (Buffer | string)[],
  maxBytes: number,
  unterminated: "record" | "hold" = "record",
): Promise<SplitLine[]> {
  const out: SplitLine[] = [];
  for await (const batch of splitLines(
    (async function* () {
      yield* chunks;
    })(),
    { maxBytes, unterminated },
  ))
    out.push(...batch);
  return out;
}
const texts = (lines: SplitLine[]) =>
  lines.map((l) => [l.line, l.bytes.toString(), l.tooLong, l.terminated, l.endOffset]);

describe("splitLines", () => {
  it("splits on LF, CRLF and a lone CR across chunk boundaries, with byte offsets after each line", async () => {
    expect(texts(await split(["ab\r", "\ncd\n", "e\rf\n\ng"], 100))).toEqual([
      [1, "ab", false, true, 4],
      [2, "cd", false, true, 7],
      [3, "e", false, true, 9],
      [4, "f", false, true, 11],
      [5, "", false, true, 12],
      [6, "g", false, false, 13],
    ]);
  });

  it("says which line end each line had, so a record of several lines is put back byte for byte; CR-only input is split on the bytes", async () => {
    const lines = await split(["a\r", "\nb\rc", "\r", "d\n", "e\r"], 100);
    expect(lines.map((l) => [l.line, l.bytes.toString(), l.eol, l.endOffset])).toEqual([
      [1, "a", "\r\n", 3],
      [2, "b", "\r", 5],
      [3, "c", "\r", 7],
      [4, "d", "\n", 9],
      [5, "e", "\r", 11],
    ]);
    // A CR as the input's last byte may be half of a CRLF still being written: held with the final line.
    expect((await split(["a\rb\r"], 100, "hold")).map((l) => [l.bytes.toString(), l.eol])).toEqual([["a", "\r"]]);
    // 3 MiB of CR-only lines in 64 KiB chunks: every line whole, none too long.
    const text = Buffer.from("x,1\r".repeat(786_432));
    const chunks = Array.from({ length: text.length / 65_536 }, (_, i) => text.subarray(i * 65_536, (i + 1) * 65_536));
    const many = await split(chunks, 1024);
    expect([many.length, many.every((l) => l.bytes.toString() === "x,1" && !l.tooLong)]).toEqual([786_432, true]);
  });

  it("holds back a final line without its newline when asked (append-only files)", async () => {
    expect(texts(await split(["a\nb\nhalf-writ"], 100, "hold"))).toEqual([
      [1, "a", false, true, 2],
      [2, "b", false, true, 4],
    ]);
  });

  it("a line over the limit keeps its first maxBytes bytes, counts the rest, and the next line is whole", async () => {
    const lines = await split(["12345", "67890abc", "def\nnext\n"], 4);
    expect(lines.map((l) => [l.line, l.bytes.toString(), l.tooLong, l.length, l.endOffset])).toEqual([
      [1, "1234", true, 16, 17],
      [2, "next", false, 4, 22],
    ]);
  });

  it("never holds more than the limit of a huge line: 256 MiB without a newline, fed from one reused 64 KiB chunk, costs no more than the limit", async () => {
    const LIMIT = 4096;
    const chunk = Buffer.alloc(64 * 1024, 0x78);
    const count = 4096; // 256 MiB in all
    async function* input() {
      for (let i = 0; i < count; i++) yield chunk;
      yield Buffer.from("\nafter\n");
    }
    const rssBefore = process.memoryUsage().rss;
    const out: SplitLine[] = [];
    for await (const batch of splitLines(input(), { maxBytes: LIMIT, unterminated: "record" })) out.push(...batch);
    const grew = process.memoryUsage().rss - rssBefore;
    expect(out.map((l) => [l.line, l.bytes.length, l.tooLong, l.length])).toEqual([
      [1, LIMIT, true, count * chunk.length],
      [2, 5, false, 5],
    ]);
    // Holding the line would take 256 MiB; the splitter holds the limit (the input is one reused buffer).
    expect(grew).toBeLessThan(64 * 1024 * 1024);
  });
});

describe("utf8Prefix", () => {
  it("cuts at a character boundary, never inside a multi-byte character", () => {
    const bytes = Buffer.from("aé€😀", "utf8"); // 1 + 2 + 3 + 4 bytes
    expect([1, 2, 3, 4, 5, 6, 7, 9, 10].map((n) => utf8Prefix(bytes, n))).toEqual([
      "a",
      "a",
      "aé",
      "aé",
      "aé",
      "aé€",
      "aé€",
      "aé€",
      "aé€😀",
    ]);
  });
});
