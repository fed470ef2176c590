/**
 * `ingest`'s progress through a pipe (stderr is no terminal), via the built CLI: a file's progress in
 * bytes of its real size (not a total of 0), stdin's as a count of rows; at most one line per
 * STRAGGLER_PROGRESS_EVERY (here `0 seconds`: every step, 10,000 rows); `--json` on stdout stays one
 * document; on a terminal, a bar of the file's size. (Lines at most every 5 s, none for quick work:
 * test/unit/progressBar.test.ts, with a clock.)
 */
import { spawn } from "node:child_process";
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { stripVTControlCharacters } from "node:util";
import { describe, expect, it } from "vitest";
import { CLI, startCli } from "../helpers/cli.js";
import { REPO_ROOT } from "../helpers/fixtures.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();
const ROWS = 25_000;
/** Every line the same length: record i ends at byte i × LINE. */
const line = (i: number) =>
  `${JSON.stringify({ id: `e${String(i).padStart(6, "0")}`, t: "2026-10-01T00:00:00.000Z", k: "a", v: 1 })}\n`;
const LINE = line(0).length;

function setup(url: string) {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-cli-progress-"));
  const config = path.join(dir, "pipelines.yaml");
  writeFileSync(
    config,
    `pipelines:
  - name: prog
    source: { format: jsonl }
    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }
    timestamps: { format: iso8601 }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
`,
  );
  const file = path.join(dir, "big.jsonl");
  writeFileSync(file, Array.from({ length: ROWS }, (_, i) => line(i)).join(""));
  return { dir, file, env: { DATABASE_URL: url, STRAGGLER_PIPELINES: config } };
}

describe("ingest's progress through a pipe", () => {
  it("a file: in bytes of its size, a line per step with STRAGGLER_PROGRESS_EVERY=0 seconds, stdout one JSON document", async () => {
    const { url } = await getDb();
    const { file, env } = setup(url);
    const size = statSync(file).size;
    expect([LINE, size]).toEqual([62, ROWS * 62]);
    const r = await startCli(["ingest", "-p", "prog", file, "--json"], {
      ...env,
      STRAGGLER_PROGRESS_EVERY: "0 seconds",
    }).done;
    // 62-byte lines: 10,000 rows are 620,000 bytes of 1,550,000.
    expect([r.code, r.stderr]).toEqual([
      0,
      [
        "big.jsonl: 40% (620.0 kB of 1.6 MB) 10,000 rows",
        "big.jsonl: 80% (1.2 MB of 1.6 MB) 20,000 rows",
        "big.jsonl: 100% (1.6 MB of 1.6 MB) 25,000 rows",
        "",
      ].join("\n"),
    ]);
    const report = JSON.parse(r.stdout) as { landed: { source: string; landed: number }[] };
    expect(report.landed.map((l) => [l.source, l.landed])).toEqual([["big.jsonl", ROWS]]);
  });

  it("a file already landed: no progress line (the default, 5 s); stdin: a count of rows, no whole", async () => {
    const { url } = await getDb();
    const { file, env } = setup(url);
    const quick = await startCli(["ingest", "-p", "prog", file], env).done;
    expect([quick.code, quick.stderr, quick.stdout.split("\n")[0]]).toEqual([
      0,
      "",
      "prog: 0 sources landed, 1 already landed",
    ]);

    const child = spawn(CLI[0], [CLI[1], "ingest", "-p", "prog", "-"], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env, STRAGGLER_PROGRESS_EVERY: "0 seconds" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "",
      stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.stdin.end(Array.from({ length: 12_000 }, (_, i) => line(100_000 + i)).join(""));
    const code = await new Promise((resolve) => child.on("exit", resolve));
    expect([code, stderr, stdout.split("\n")[0]]).toEqual([
      0,
      "stdin: 10,000 rows\nstdin: 12,000 rows\n",
      "prog: 1 source landed (12000 rows: 12000 accepted, 0 quarantined)",
    ]);
  });

  it("on a terminal (a pseudo-terminal from util-linux `script`): a cli-progress bar in bytes of the file's size, ending at 100%", async () => {
    const { url } = await getDb();
    const { dir, env } = setup(url);
    const file = path.join(dir, "tty.jsonl"); // a file of its own: the first test landed big.jsonl
    writeFileSync(file, Array.from({ length: ROWS }, (_, i) => line(200_000 + i)).join(""));
    const child = spawn("script", ["-qec", `${CLI[0]} ${CLI[1]} ingest -p prog ${file}`, "/dev/null"], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    // stdin stays open while it runs (script forwards it to the terminal; its end could close the pseudo-terminal).
    const code = await new Promise((resolve) => child.on("exit", resolve));
    child.stdin.end();
    // Each redraw starts at column 1 (ESC [1G); the terminal's own line ends are \r\n.
    const drawn = out
      .split(new RegExp(`${String.fromCharCode(27)}\\[1G|\\r?\\n`))
      .map((t) => stripVTControlCharacters(t).trimEnd())
      .filter((t) => t !== "");
    expect([
      code,
      drawn.filter((t) => t.startsWith("tty.jsonl [")).at(-1),
      drawn.filter((t) => t.startsWith("prog:")),
    ]).toEqual([
      0,
      `tty.jsonl [${"█".repeat(40)}] 100% | 1.6 MB of 1.6 MB | ETA 0s | 25,000 rows`,
      [
        "prog: 1 source landed (25000 rows: 25000 accepted, 0 quarantined)",
        "prog: tty.jsonl: landed 25000, accepted 25000, quarantined 0",
      ],
    ]);
  });
});
