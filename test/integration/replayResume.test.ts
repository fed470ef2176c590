/**
 * A replay run again after it completed: the completion recorded in
 * `straggler.landed_sources` says in one query that every micro-batch was
 * landed; the files are not read (their size and modification time prove them
 * unchanged), or read only for their SHA-256 when the modification time moved.
 * Nothing lands the second time, and the summary says so.
 */
import { readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { replay } from "../../src/replay/replay.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { replayedOrders } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

/** Six orders arriving over three hours: three micro-batches of one hour. */
const ROWS =
  [
    "id,event_time,arrived,amount",
    "a,2024-01-15T12:01:00Z,2024-01-15T12:01:30Z,10",
    "b,2024-01-15T12:02:00Z,2024-01-15T12:02:30Z,20",
    "c,2024-01-15T13:03:00Z,2024-01-15T13:03:30Z,30",
    "d,2024-01-15T13:04:00Z,2024-01-15T13:04:30Z,40",
    "e,2024-01-15T14:05:00Z,2024-01-15T14:05:30Z,50",
    "f,2024-01-15T14:06:00Z,2024-01-15T14:06:30Z,60",
  ].join("\n") + "\n";
const HOUR = 3_600_000;

const setup = (name: string) => replayedOrders(name, ROWS, "straggler-resume-");

const bronzeRows = async (
  pool: { query: (q: string, v: unknown[]) => Promise<{ rows: { n: number }[] }> },
  name: string,
) =>
  (await pool.query("SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1", [name])).rows[0]!.n;

describe("a replay run again after it completed", () => {
  it("lands nothing and reads no file beyond its stat; a moved modification time costs one SHA-256; another span replays", async () => {
    const { pool } = await getDb();
    const { p, file } = setup("resume-lib");
    const opts = { files: [file], arrivalField: "arrived", batchSpanMs: HOUR };
    // A whole second: a modification time put back below is then the same to the millisecond.
    const mtime = new Date("2026-10-01T12:00:00Z");
    utimesSync(file, mtime, mtime);
    const first = await replay(pool, p, opts);
    expect([
      first.replayBatches,
      first.skippedBatches,
      first.rowsLanded,
      first.rowsStaged,
      first.refused,
      first.landedBefore,
    ]).toEqual([3, 0, 6, 6, [], null]);
    expect(await bronzeRows(pool, p.name)).toBe(6);
    const completedAt = (
      await pool.query(
        "SELECT source, landed_at FROM straggler.landed_sources WHERE pipeline = $1 AND source LIKE '%:complete:%'",
        [p.name],
      )
    ).rows as { source: string; landed_at: string }[];
    expect(
      completedAt.map((r) =>
        r.source.replace(/^replay:[0-9a-f]{12}:/, "replay:ID:").replace(/files=[0-9a-f]{16}$/, "files=FP"),
      ),
    ).toEqual(["replay:ID:complete:span=3600000ms:batches=3:rows=6:files=FP"]);

    // The same size and modification time over other bytes — a header the reader refuses: read, the
    // file would be refused. Not read, the replay knows from its record that all was landed.
    const unreadable = ROWS.replace("id,event_time", "xx,yyyyy_yyyy");
    expect(unreadable.length).toBe(ROWS.length);
    writeFileSync(file, unreadable);
    utimesSync(file, mtime, mtime);
    expect(statSync(file).mtimeMs).toBe(mtime.getTime());
    const second = await replay(pool, p, opts);
    expect(second).toEqual({
      rowsStaged: 6,
      staged: false,
      ordered: "file",
      replayBatches: 0,
      skippedBatches: 3,
      streamBatches: 0,
      rowsLanded: 0,
      duplicateRows: 0,
      elapsedMs: second.elapsedMs,
      refused: [],
      alreadyLanded: null,
      landedBefore: `every micro-batch was landed before (3 micro-batches, 6 rows; this replay completed at ${completedAt[0]!.landed_at}): nothing landed; the files' sizes and modification times are unchanged, so they were not read`,
    });
    expect(await bronzeRows(pool, p.name)).toBe(6);

    // The bytes back, the modification time moved: the SHA-256 proves them unchanged, and is recorded with the new time.
    writeFileSync(file, ROWS);
    const later = new Date(mtime.getTime() + 60_000);
    utimesSync(file, later, later);
    const touched = await replay(pool, p, opts);
    expect([touched.replayBatches, touched.skippedBatches, touched.rowsLanded, touched.landedBefore]).toEqual([
      0,
      3,
      0,
      `every micro-batch was landed before (3 micro-batches, 6 rows; this replay completed at ${completedAt[0]!.landed_at}): nothing landed; the files' modification times changed but their SHA-256 did not`,
    ]);
    const third = await replay(pool, p, opts);
    expect(third.landedBefore).toBe(
      touched.landedBefore!.replace(
        "the files' modification times changed but their SHA-256 did not",
        "the files' sizes and modification times are unchanged, so they were not read",
      ),
    );

    // Other bytes of the same size (a new modification time): no completion matches their SHA-256; the replay reads the file.
    writeFileSync(file, ROWS.replace(",10\n", ",11\n"));
    const changed = await replay(pool, p, opts);
    expect([changed.landedBefore, changed.skippedBatches, changed.replayBatches, changed.rowsStaged]).toEqual([
      null,
      3,
      0,
      6,
    ]);

    // Another span is another replay: its micro-batches (one minute: six) are new sources, read from the file;
    // five of its rows are already in bronze as they are (DUPLICATE), order a's amount is new.
    const other = await replay(pool, p, { ...opts, batchSpanMs: 60_000 });
    expect([other.landedBefore, other.replayBatches, other.rowsStaged, other.duplicateRows]).toEqual([null, 6, 6, 5]);
    expect(readFileSync(file, "utf8")).toBe(ROWS.replace(",10\n", ",11\n"));
  });

  it("CLI: the second replay prints that every micro-batch was landed before, and --json carries it", async () => {
    const { url } = await getDb();
    const { config } = setup("resume-cli");
    const cli = (...args: string[]) => startCli(["-c", config, ...args], { DATABASE_URL: url }).done;
    const first = await cli("replay", "-p", "resume-cli");
    const what = "1 file into resume-cli by arrived, 1 hour of arrival time per micro-batch (external database)";
    // The summary line first; the last micro-batch's progress; the figures. (What starts goes to stderr, with the progress.)
    expect([
      first.code,
      first.stderr.split("\n")[0],
      first.stdout
        .split("\n")
        .slice(0, 4)
        .map((l) => l.replace(/ in \d+ ms \(\d+ rows\/s\)/, " in T ms (R rows/s)")),
    ]).toEqual([
      0,
      `Replaying ${what}`,
      [
        `resume-cli: replayed ${what}: 6 rows landed in 3 micro-batches, 3 stream batches, watermark 2024-01-15T13:56:00.000Z`,
        "",
        "Last micro-batch progress:",
        "resume-cli batch 2: 2 rows in T ms (R rows/s), watermark 2024-01-15T13:56:00.000Z, numRowsDroppedByWatermark 0, numRowsUpdated 1, finalized 1, numRowsTotal 1",
      ],
    ]);
    const again = await cli("replay", "-p", "resume-cli");
    expect([again.code, again.stderr]).toEqual([0, `Replaying ${what}\n`]);
    const lines = again.stdout.trimEnd().split("\n");
    expect(
      lines.map((l) =>
        l
          .replace(/^( {2}elapsed: )\d+\.\d s/, "$1T s")
          .replace(/^( {2}peak RSS: )\d+ MB$/, "$1M MB")
          .replace(/completed at [^)]+\)/, "completed at T)"),
      ),
    ).toEqual([
      `resume-cli: replayed ${what}: 0 rows landed in 0 micro-batches (3 already landed: resumed), 0 stream batches, watermark 2024-01-15T13:56:00.000Z`,
      "  replay micro-batches: 0 landed, 3 already landed (resumed); 0 stream batches",
      "  elapsed: T s (0 rows landed: every micro-batch was already landed (resumed))",
      "  peak RSS: M MB",
      "  rows landed:              6",
      "  accepted:                 6",
      "  quarantined:              0 (none)",
      "  dropped by watermark:     0 (event, window) pairs, in 0 windows awaiting correction",
      "  windows open / final:     1 / 2",
      "  final watermark:          2024-01-15T13:56:00.000Z",
      "  stream batches:           3",
      "resume-cli: every micro-batch was landed before (3 micro-batches, 6 rows; this replay completed at T): nothing landed; the files' sizes and modification times are unchanged, so they were not read",
    ]);
    const asJson = JSON.parse((await cli("replay", "-p", "resume-cli", "--json")).stdout);
    expect([
      asJson.replayBatches,
      asJson.skippedBatches,
      asJson.rowsLanded,
      asJson.landedBefore.startsWith("every micro-batch was landed before (3 micro-batches, 6 rows;"),
    ]).toEqual([0, 3, 0, true]);
  });
});
