/**
 * Long lists in the CLI's output for people: a summary line first, the first
 * `--limit` items (default 20), then "… and N more"; `--json` has every item.
 * On `reconcile` with more mismatches than the limit, `sources` and `ingest`
 * (exact output, the same through `--limit 0`, and `--json` whole).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();
const at = (minutes: number) => new Date(Date.parse("2026-10-01T00:00:00Z") + minutes * 60_000).toISOString();
const WINDOWS = 30;
const TAMPERED = 25;

/** `straggler <args>` to the end: its exit code and output. */
async function cli(env: Record<string, string>, args: string[]) {
  const r = await startCli(args, env).done;
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

/** Pipeline `shop`: one event in each of 30 ten-minute windows (value 10 + i), all final after one more event far later; one landing file per 10 events; landed by `ingest --stream --limit 2` (its output in `ingested`). */
async function setup() {
  const { url, pool } = await getDb();
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-cli-limits-"));
  const landing = path.join(dir, "landing");
  mkdirSync(landing);
  const events = Array.from({ length: WINDOWS }, (_, i) =>
    JSON.stringify({ id: `e${i}`, t: at(10 * i + 1), k: "a", v: 10 + i }),
  );
  events.push(JSON.stringify({ id: "later", t: at(10 * WINDOWS + 100), k: "a", v: 1 }));
  for (let f = 0; f * 10 < events.length; f++)
    writeFileSync(
      path.join(landing, `part-${String(f).padStart(2, "0")}.jsonl`),
      events.slice(f * 10, f * 10 + 10).join("\n") + "\n",
    );
  const config = path.join(dir, "pipelines.yaml");
  writeFileSync(
    config,
    `pipelines:
  - name: shop
    source: { landingDir: landing, format: jsonl }
    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }
    timestamps: { format: iso8601 }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
  - name: paged
    source: { landingDir: landing, format: jsonl }
    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }
    timestamps: { format: iso8601 }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
    trigger: { maxRowsPerBatch: 5 }
`,
  );
  const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: config };
  const ingested = await cli(env, ["ingest", "-p", "shop", "--stream", "--limit", "2"]);
  expect([ingested.code, ingested.stderr]).toEqual([0, ""]);
  return { env, pool, ingested: ingested.stdout };
}

describe("the CLI's long lists", () => {
  it("reconcile with more mismatches than the limit: the summary, the first 20, '… and N more'; --limit N; --json has them all", async () => {
    const { env, pool, ingested } = await setup();
    // ingest: the summary line, the first --limit landings, how many more; the stream's summary and its batch.
    expect(ingested.replace(/ in \d+ ms \(\d+ rows\/s\)/, " in T ms (R rows/s)").split("\n")).toEqual([
      "shop: 4 sources landed (31 rows: 31 accepted, 0 quarantined)",
      "shop: part-00.jsonl: landed 10, accepted 10, quarantined 0",
      "shop: part-01.jsonl: landed 10, accepted 10, quarantined 0",
      "shop: … and 2 more sources landed (--limit N shows more, --json all)",
      "shop: 1 micro-batch, 31 rows, watermark 2026-10-01T06:30:00.000Z, 0 (event, window) pairs dropped by watermark",
      "shop batch 0: 31 rows in T ms (R rows/s), watermark 2026-10-01T06:30:00.000Z, numRowsDroppedByWatermark 0, numRowsUpdated 31, finalized 30, numRowsTotal 1",
      "",
    ]);
    const clean = await cli(env, ["reconcile", "-p", "shop"]);
    expect([clean.code, clean.stdout]).toEqual([
      0,
      "shop: 30 final windows checked, 0 mismatches; ledger landed 31 = accepted 31 + quarantined 0 (balanced); backlog 0 rows\n",
    ]);

    // The stored count of the first 25 windows made one too many: 25 mismatches.
    const tampered = await pool.query(
      "UPDATE straggler.window_results_table SET event_count = event_count + 1 WHERE pipeline = 'shop' AND window_start < $1",
      [at(10 * TAMPERED)],
    );
    expect(tampered.rowCount).toBe(TAMPERED);
    const mismatch = (i: number) =>
      `  a [${at(10 * i)}, ${at(10 * i + 10)}) stored count 2 sum ${10 + i} min ${10 + i} max ${10 + i}, expected count 1 sum ${10 + i} min ${10 + i} max ${10 + i}`;
    const summary =
      "shop: 30 final windows checked, 25 mismatches; ledger landed 31 = accepted 31 + quarantined 0 (balanced); backlog 0 rows";

    const byDefault = await cli(env, ["reconcile", "-p", "shop"]);
    expect([byDefault.code, byDefault.stderr]).toEqual([1, ""]);
    expect(byDefault.stdout.split("\n")).toEqual([
      summary,
      ...Array.from({ length: 20 }, (_, i) => mismatch(i)),
      "  … and 5 more mismatches (--limit N shows more, --json all)",
      "",
    ]);

    const three = await cli(env, ["reconcile", "-p", "shop", "--limit", "3"]);
    expect([three.code, three.stdout.split("\n")]).toEqual([
      1,
      [
        summary,
        mismatch(0),
        mismatch(1),
        mismatch(2),
        "  … and 22 more mismatches (--limit N shows more, --json all)",
        "",
      ],
    ]);
    const none = await cli(env, ["reconcile", "-p", "shop", "--limit", "0"]);
    expect([none.code, none.stdout]).toEqual([
      1,
      `${summary}\n  … and 25 more mismatches (--limit N shows more, --json all)\n`,
    ]);
    const all = await cli(env, ["reconcile", "-p", "shop", "--limit", "25"]);
    expect([all.code, all.stdout]).toEqual([
      1,
      [summary, ...Array.from({ length: 25 }, (_, i) => mismatch(i))].join("\n") + "\n",
    ]);

    const asJson = await cli(env, ["reconcile", "-p", "shop", "--json"]);
    const [report] = JSON.parse(asJson.stdout) as {
      mismatches: { windowStart: string; stored: { count: number }; expected: { count: number } }[];
    }[];
    expect([
      asJson.code,
      report!.mismatches.length,
      report!.mismatches.map((m) => [m.windowStart, m.stored.count, m.expected.count]),
    ]).toEqual([1, TAMPERED, Array.from({ length: TAMPERED }, (_, i) => [at(10 * i), 2, 1])]);

    const bad = await cli(env, ["reconcile", "-p", "shop", "--limit", "many"]);
    expect([bad.code, bad.stdout, bad.stderr]).toEqual([
      2,
      "",
      'straggler: --limit: expected a whole number from 0 to 1000000, got "many"\n',
    ]);

    // correct over the tampered range: the run's summary line, the first --limit windows it changed, how many more, where to read them.
    const range = ["--from", at(0), "--to", at(10 * TAMPERED)];
    const corrected = await cli(env, ["correct", "-p", "shop", ...range, "--limit", "2"]);
    const change = (i: number) =>
      `  a [${at(10 * i)}, ${at(10 * i + 10)}) count 2 -> 1, sum ${10 + i} -> ${10 + i} (revision 2, 0 late events)`;
    const runId = /^shop: correction run (\d+) /.exec(corrected.stdout)?.[1];
    expect([corrected.code, corrected.stderr, corrected.stdout.replace(/, \d+ ms\n/, ", T ms\n").split("\n")]).toEqual([
      0,
      "",
      [
        `shop: correction run ${runId} succeeded: ${TAMPERED} windows examined, ${TAMPERED} changed, 0 late events recovered, T ms`,
        change(0),
        change(1),
        `  … and ${TAMPERED - 2} more windows changed (--limit N shows more, --json all)`,
        `  read: straggler.window_results (the windows now), straggler.correction_audit WHERE run_id = ${runId} (each window before and after), straggler.correction_history (the runs)`,
        "",
      ],
    ]);
    // The same range again changes nothing (--limit 0: the summary line alone); --json would have every change.
    const again = await cli(env, ["correct", "-p", "shop", ...range, "--limit", "0"]);
    expect([again.code, again.stdout.replace(/, \d+ ms\n/, ", T ms\n")]).toEqual([
      0,
      `shop: correction run ${Number(runId) + 1} succeeded: ${TAMPERED} windows examined, 0 changed, 0 late events recovered, T ms\n`,
    ]);
    // Tampered again: --json has every window changed, whatever --limit says.
    await pool.query(
      "UPDATE straggler.window_results_table SET event_count = event_count + 1 WHERE pipeline = 'shop' AND window_start < $1",
      [at(10 * TAMPERED)],
    );
    const asJsonRun = await cli(env, ["correct", "-p", "shop", ...range, "--limit", "1", "--json"]);
    const [run] = JSON.parse(asJsonRun.stdout) as {
      windowsChanged: number;
      changes: { windowStart: string; after: { count: number } }[];
    }[];
    expect([asJsonRun.code, run!.windowsChanged, run!.changes.map((c) => [c.windowStart, c.after.count])]).toEqual([
      0,
      TAMPERED,
      Array.from({ length: TAMPERED }, (_, i) => [at(10 * i), 1]),
    ]);
  });

  it("sources: the counts first, the most recently seen up to --limit, then how many more", async () => {
    const { env, ingested } = await setup();
    // setup's ingest found the same files landed by the first test (the same database): the skipped files cut at --limit 2.
    expect(ingested.split("\n")).toEqual([
      "shop: 0 sources landed, 4 already landed",
      "shop: part-00.jsonl already landed; skipped",
      "shop: part-01.jsonl already landed; skipped",
      "shop: … and 2 more files already landed; skipped (--limit N shows more, --json all)",
      "shop: nothing new in bronze",
      "",
    ]);
    const two = await cli(env, ["sources", "-p", "shop", "--limit", "2"]);
    const lines = two.stdout.split("\n");
    expect([two.code, lines.length, lines[0], lines[3], lines[4]]).toEqual([
      0,
      5,
      "shop: landed 4, refused 0, changed_after_landing 0, waiting_to_settle 0",
      "  … and 2 more (--limit N up to 10000, most recently seen first)",
      "",
    ]);
    const row = /^ {2}landed {16}file {3}part-0\d\.jsonl: (10|1) rows \((10|1) accepted, 0 quarantined\), \d+ bytes$/;
    expect(lines.slice(1, 3).map((l) => row.test(l))).toEqual([true, true]);
    const byDefault = await cli(env, ["sources", "-p", "shop"]);
    expect([byDefault.code, byDefault.stdout.split("\n").length]).toEqual([0, 6]); // the counts, 4 sources, the end

    // ingest of a landing folder landed before: the first --limit files skipped, then how many more.
    const again = await cli(env, ["ingest", "-p", "shop", "--limit", "1"]);
    expect([again.code, again.stdout, again.stderr]).toEqual([
      0,
      "shop: 0 sources landed, 4 already landed\nshop: part-00.jsonl already landed; skipped\nshop: … and 3 more files already landed; skipped (--limit N shows more, --json all)\n",
      "",
    ]);
    const summaryOnly = await cli(env, ["ingest", "-p", "shop", "--limit", "0"]);
    expect([summaryOnly.code, summaryOnly.stdout]).toEqual([
      0,
      "shop: 0 sources landed, 4 already landed\nshop: … and 4 more files already landed; skipped (--limit N shows more, --json all)\n",
    ]);
    // --json: the whole report, every file, whatever --limit says.
    const asJson = await cli(env, ["ingest", "-p", "shop", "--limit", "1", "--json"]);
    expect([asJson.code, asJson.stderr, JSON.parse(asJson.stdout)]).toEqual([
      0,
      "",
      {
        pipeline: "shop",
        landed: [],
        skipped: ["part-00.jsonl", "part-01.jsonl", "part-02.jsonl", "part-03.jsonl"],
        refused: [],
        changed: [],
        waiting: [],
        batches: [],
      },
    ]);
  });

  it("stream: per pipeline the summary line, the first --limit micro-batches, how many more, then the last; --json every batch", async () => {
    const { env } = await setup();
    expect((await cli(env, ["ingest", "-p", "paged"])).code).toBe(0);
    // 31 rows, 5 per micro-batch: one with --once (as JSON), then the other six.
    const once = await cli(env, ["stream", "-p", "paged", "--once", "--json"]);
    const [first] = JSON.parse(once.stdout) as {
      pipeline: string;
      batches: { batchId: number; numInputRows: number }[];
    }[];
    expect([once.code, first!.pipeline, first!.batches.map((b) => [b.batchId, b.numInputRows])]).toEqual([
      0,
      "paged",
      [[0, 5]],
    ]);
    const rest = await cli(env, ["stream", "-p", "paged", "--limit", "2"]);
    const lines = rest.stdout.split("\n");
    expect([rest.code, rest.stderr, lines.length, lines[0], lines[3], lines[5]]).toEqual([
      0,
      "",
      6,
      "paged: 6 micro-batches, 26 rows, watermark 2026-10-01T06:30:00.000Z, 0 (event, window) pairs dropped by watermark",
      "… and 3 more micro-batches (--limit N shows more, --json all), then the last:",
      "",
    ]);
    expect(
      [lines[1], lines[2], lines[4]].map((l) => /^paged batch (\d): (\d) rows in \d+ ms/.exec(l!)?.slice(1)),
    ).toEqual([
      ["1", "5"],
      ["2", "5"],
      ["6", "1"],
    ]);
    const none = await cli(env, ["stream", "-p", "paged"]);
    expect([none.code, none.stdout]).toEqual([0, "paged: nothing new in bronze\n"]);
  });
});
