/**
 * The CLI's progress (src/cli/progressBar.ts): a cli-progress bar with the real whole on a terminal,
 * a count without a whole when none is known, and through a pipe a line at most every `everyMs`.
 */
import { stripVTControlCharacters } from "node:util";
import { describe, expect, it } from "vitest";
import { formatBytes, progressBar, progressFigure } from "../../src/cli/progressBar.js";

/** A stream that keeps what is written; `isTTY` as given. */
function sink(isTTY: boolean) {
  const s = { isTTY, columns: 120, text: "", write: (t: string) => ((s.text += t), true) };
  return s;
}

/** What a terminal shows at the end: each redraw starts at column 1 (ESC [1G); escapes removed, the ETA's seconds as `?`. */
const lastDrawn = (text: string) =>
  stripVTControlCharacters(text.split("\u001b[1G").at(-1)!).replace(/ETA \d+s/, "ETA ?s");

describe("progress on a terminal", () => {
  it("a file: a bar in bytes of its size, the rows as info", () => {
    const out = sink(true);
    const bar = progressBar("a.jsonl", { unit: "bytes", total: 2_900_000, stream: out });
    bar.update(1_200_000, "10,000 rows");
    bar.stop();
    expect(lastDrawn(out.text)).toBe(
      `a.jsonl [${"█".repeat(17)}${"░".repeat(23)}] 41% | 1.2 MB of 2.9 MB | ETA ?s | 10,000 rows\n`,
    );
  });

  it("stdin: a count of rows, no bar and no percentage (no whole is known)", () => {
    const out = sink(true);
    const bar = progressBar("stdin", { unit: "rows", stream: out });
    bar.update(20_000);
    bar.update(25_000);
    bar.stop();
    expect(lastDrawn(out.text)).toBe("stdin 25,000 rows\n");
    bar.update(30_000); // after stop: nothing more
    expect(lastDrawn(out.text)).toBe("stdin 25,000 rows\n");
  });
});

describe("progress through a pipe", () => {
  it("a line at most every everyMs, none for quick work, the last figure at the end once a line was printed", () => {
    let t = 0;
    const out = sink(false);
    const bar = progressBar("a.jsonl", { unit: "bytes", total: 3_000_000, everyMs: 5_000, stream: out, now: () => t });
    t = 1_000;
    bar.update(500_000, "1,000 rows");
    expect(out.text).toBe("");
    t = 5_000;
    bar.update(1_000_000, "2,000 rows");
    t = 9_000;
    bar.update(2_000_000, "4,000 rows"); // 4 s after the last line: not printed
    t = 9_500;
    bar.update(3_000_000, "6,000 rows");
    bar.stop();
    expect(out.text).toBe("a.jsonl: 33% (1.0 MB of 3.0 MB) 2,000 rows\na.jsonl: 100% (3.0 MB of 3.0 MB) 6,000 rows\n");

    const quick = sink(false);
    const q = progressBar("b.jsonl", { unit: "bytes", total: 100, everyMs: 5_000, stream: quick, now: () => 0 });
    q.update(100);
    q.stop();
    expect(quick.text).toBe("");
  });

  it("everyMs 0: a line at every step; rows without a whole are counted", () => {
    const out = sink(false);
    const bar = progressBar("stdin", { unit: "rows", everyMs: 0, stream: out });
    bar.update(10_000);
    bar.update(12_345);
    bar.stop();
    expect(out.text).toBe("stdin: 10,000 rows\nstdin: 12,345 rows\n");
  });
});

describe("the figures", () => {
  it("bytes in SI units, shares rounded down, rows of a whole", () => {
    expect([0, 999, 1_000, 1_234_567, 999_960, 4_500_000_000].map(formatBytes)).toEqual([
      "0 B",
      "999 B",
      "1.0 kB",
      "1.2 MB",
      "1.0 MB",
      "4.5 GB",
    ]);
    expect(progressFigure(999, { unit: "rows", total: 1_000 })).toBe("99% (999 of 1,000 rows)");
    expect(progressFigure(0, { unit: "bytes", total: 0 })).toBe("100% (0 B of 0 B)");
  });
});
