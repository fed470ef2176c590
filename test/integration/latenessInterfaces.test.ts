/**
 * `straggler lateness` and `GET /pipelines/{pipeline}/lateness` on a workload
 * worked out by hand: the table printed, the configured delay's dropped pairs
 * equal to what the real run recorded, the same numbers from both, and bad
 * parameters refused (exit 2 / 400) with the same messages.
 *
 * The workload: 10-minute tumbling windows, 10-minute delay, 2 rows per batch,
 * event (t) and ingestion (i) times in minutes after 2026-10-01T00:00Z, keys
 * alternating even, odd:
 *
 *   batch 0: (1, 2) (25, 26)      watermark for batch 1: 25 - 10 = 15
 *   batch 1: (3, 27) (14, 28)     (3, 27) in [0, 10): 10 <= 15, dropped
 *   batch 2: (44, 45) (5, 46)     (5, 46) in [0, 10): dropped; watermark for batch 3: 34
 *   batch 3: (31, 47) (12, 48)    (12, 48) in [10, 20): 20 <= 34, dropped
 *
 * So the run drops 3 pairs in 3 windows (even [0, 10), odd [0, 10), odd [10, 20)). Lateness (min): 1 1 24 14 1 41 16 36:
 * p50 14, p90 = p99 = max 41. Each event needs a delay above (max event time of
 * earlier batches − its window's end): 15 min for (3, 27) and (5, 46), 24 min for
 * (12, 48), 5 min for (14, 28), 4 min for (31, 47). So no event is dropped from
 * 24 min + 1 ms on, and at most 40 % (3 of 8) from 5 min + 1 ms on.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelines } from "../../src/config/pipelines.js";
import { createLogger } from "../../src/log.js";
import { startApi } from "../helpers/api.js";
import { runCli, startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();
const MIN = 60_000;
const at = (minutes: number) => new Date(Date.parse("2026-10-01T00:00:00Z") + minutes * MIN).toISOString();
const EVENTS: [number, number][] = [
  [1, 2],
  [25, 26],
  [3, 27],
  [14, 28],
  [44, 45],
  [5, 46],
  [31, 47],
  [12, 48],
];

let ready: Promise<{ env: Record<string, string>; config: string }> | undefined;

/** The pipeline's file and config, landed and streamed once through the CLI. */
function setup() {
  ready ??= (async () => {
    const { url } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-lateness-"));
    mkdirSync(path.join(dir, "landing"));
    writeFileSync(
      path.join(dir, "landing", "events.jsonl"),
      EVENTS.map(([t, i], n) =>
        JSON.stringify({ id: `e${n}`, t: at(t), i: at(i), k: n % 2 ? "odd" : "even", v: n }),
      ).join("\n") + "\n",
    );
    const config = path.join(dir, "pipelines.yaml");
    writeFileSync(
      config,
      `pipelines:
  - name: advised
    source: { landingDir: landing, format: jsonl }
    fields: { eventId: id, eventTime: t, ingestionTime: i, groupKey: [k], value: v }
    timestamps: { format: iso8601 }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
    trigger: { maxRowsPerBatch: 2 }
`,
    );
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: config };
    await runCli(["ingest", "-p", "advised", "--stream"], env);
    return { env, config };
  })();
  return ready;
}

/** `GET path` on the API over the test database and the same pipelines: status and body. */
async function get(route: string): Promise<{ status: number; body: unknown }> {
  const { pool } = await getDb();
  const { config } = await setup();
  const api = await startApi({ pool, pipelines: loadPipelines(config), log: createLogger("silent"), token: undefined });
  try {
    const res = await fetch(`${api.base}${route}`);
    return { status: res.status, body: await res.json() };
  } finally {
    await api.close();
  }
}

describe("straggler lateness and GET /pipelines/{pipeline}/lateness", () => {
  it("print the table whose configured delay drops the pairs the run recorded (numRowsDroppedByWatermark)", async () => {
    const { pool } = await getDb();
    const { env } = await setup();
    const recorded = await pool.query(
      "SELECT count(*)::int AS batches, sum(num_rows_dropped_by_watermark)::int AS dropped, max(num_rows_total)::int AS open_max FROM straggler.batch_progress WHERE pipeline = 'advised'",
    );
    expect(recorded.rows).toEqual([{ batches: 4, dropped: 3, open_max: recorded.rows[0].open_max }]);

    const r = await startCli(["lateness", "-p", "advised"], env).done;
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    const lines = r.stdout.split("\n");
    expect(lines.slice(0, 2)).toEqual([
      "Lateness of advised (ingestion time − event time) over 8 accepted rows",
      "  p50 14m   p90 41m   p99 41m   p99.9 41m   max 41m   (min 1m)",
    ]);
    expect(lines.filter((l) => /^  (1m to 10m|10m to 1h) /.test(l)).map((l) => l.split(/\s{2,}/).slice(1))).toEqual([
      ["1m to 10m", "3"],
      ["10m to 1h", "5"],
    ]);
    expect(lines).toContain(
      "What-if over the 4 recorded batches (8 rows in arrival order; the run recorded 3 dropped pairs):",
    );
    const table = lines
      .filter((l) => /^  \d+m +(configured|p50|p90)/.test(l))
      .map((l) =>
        l
          .trim()
          .split(/\s{2,}/)
          .slice(0, 6),
      );
    expect(table).toEqual([
      ["10m", "configured", "3", "3", "3", "37.500 %"],
      ["14m", "p50", "3", "3", "3", "37.500 %"],
      ["41m", "p90, p99, p99.9, max", "0", "0", "0", "0.000 %"],
    ]);
    expect(lines).toContain(
      "Recommended delay: 24m (1440001 ms), the smallest with at most 0.100 % of events dropped:",
    );

    const report = JSON.parse(await runCli(["lateness", "-p", "advised", "--json"], env));
    const configured = report.whatIf.delays.find((d: { labels: string[] }) => d.labels.includes("configured"));
    expect(configured).toMatchObject({
      delayMs: 10 * MIN,
      droppedPairs: 3,
      droppedWindows: 3,
      eventsAffected: 3,
      dropShare: 0.375,
      openWindows: { max: recorded.rows[0].open_max },
    });
    expect(report.whatIf).toMatchObject({ batches: 4, rows: 8, recordedDroppedPairs: 3 });
    expect(report.distribution).toMatchObject({
      count: 8,
      minMs: MIN,
      p50Ms: 14 * MIN,
      p90Ms: 41 * MIN,
      p99Ms: 41 * MIN,
      p999Ms: 41 * MIN,
      maxMs: 41 * MIN,
    });
    expect(report.recommendation).toMatchObject({
      targetDropShare: 0.001,
      delayMs: 24 * MIN + 1,
      droppedPairs: 0,
      dropShare: 0,
    });
  }, 300_000);

  it("answer the same numbers over REST as the CLI's --json, with the same options", async () => {
    const { env } = await setup();
    const plain = await get("/pipelines/advised/lateness");
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual(JSON.parse(await runCli(["lateness", "-p", "advised", "--json"], env)));

    const query =
      "targetDrop=40%25&delay=5%20minutes,15%20minutes&delay=30%20minutes&byKey=true&from=2026-10-01T00:00:00Z&to=2026-10-01T01:00:00Z";
    const asked = await get(`/pipelines/advised/lateness?${query}`);
    const cli = JSON.parse(
      await runCli(
        [
          "lateness",
          "-p",
          "advised",
          "--target-drop",
          "40%",
          "--delay",
          "5 minutes,15 minutes",
          "--delay",
          "30 minutes",
          "--by-key",
          "--from",
          "2026-10-01T00:00:00Z",
          "--to",
          "2026-10-01T01:00:00Z",
          "--json",
        ],
        env,
      ),
    );
    expect(asked).toEqual({ status: 200, body: cli });
    expect(cli.recommendation).toMatchObject({
      targetDropShare: 0.4,
      delayMs: 5 * MIN + 1,
      eventsAffected: 3,
      dropShare: 0.375,
    });
    expect(
      cli.whatIf.delays.map((d: { delayMs: number; labels: string[]; droppedPairs: number }) => [
        d.delayMs / MIN,
        d.labels,
        d.droppedPairs,
      ]),
    ).toEqual([
      [5, ["asked"], 4],
      [10, ["configured"], 3],
      [14, ["p50"], 3],
      [15, ["asked"], 3],
      [30, ["asked"], 0],
      [41, ["p90", "p99", "p99.9", "max"], 0],
    ]);
    expect(cli.byKey.map((k: { groupKey: string; count: number }) => [k.groupKey, k.count])).toEqual([
      ["even", 4],
      ["odd", 4],
    ]);
    expect(cli.range).toEqual({ from: "2026-10-01T00:00:00.000Z", to: "2026-10-01T01:00:00.000Z" });
  }, 300_000);

  it("say so in one line when no accepted row is in the range", async () => {
    const { env } = await setup();
    expect(await runCli(["lateness", "-p", "advised", "--from", "2030-01-01T00:00:00Z"], env)).toBe(
      "Lateness of advised: no accepted rows, event time in [2030-01-01T00:00:00.000Z, ∞), so nothing to measure yet: land rows and run the stream first (configured delay: 10m)\n",
    );
  }, 300_000);

  it("refuse bad parameters: 400 naming the query field, exit 2 naming the flag, with the same message", async () => {
    const { env } = await setup();
    const cases: [string, string[], string, string][] = [
      [
        "targetDrop=7",
        ["--target-drop", "7"],
        "targetDrop",
        'expected a drop share like 0.1% or 0.001 (from 0 to 100%), got "7"',
      ],
      ["delay=10min", ["--delay", "10min"], "delay", 'write a space between the number and its unit: "10 minutes"'],
      [
        "from=2026-10-01",
        ["--from", "2026-10-01"],
        "from",
        "expected an ISO 8601 instant with a zone, e.g. 2026-10-01T12:00:00Z",
      ],
      [
        "from=2026-10-02T00:00:00Z&to=2026-10-01T00:00:00Z",
        ["--from", "2026-10-02T00:00:00Z", "--to", "2026-10-01T00:00:00Z"],
        "to",
        "expected from < to",
      ],
    ];
    const flag: Record<string, string> = { targetDrop: "--target-drop", delay: "--delay", from: "--from", to: "--to" };
    for (const [query, args, field, message] of cases) {
      expect(await get(`/pipelines/advised/lateness?${query}`)).toEqual({
        status: 400,
        body: { error: "invalid_request", message: `query.${field}: ${message}` },
      });
      const r = await startCli(["lateness", "-p", "advised", ...args], env).done;
      expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
        code: 2,
        stdout: "",
        stderr: `straggler: ${flag[field]}: ${message}\n`,
      });
    }
    expect(await get("/pipelines/advised/lateness?target=1%25")).toMatchObject({
      status: 400,
      body: { error: "invalid_request" },
    });
    expect(await get("/pipelines/nope/lateness")).toEqual({
      status: 404,
      body: { error: "not_found", message: 'no pipeline named "nope"' },
    });
    const unknown = await startCli(["lateness", "-p", "advised", "--target", "1%"], env).done;
    expect([unknown.code, unknown.stdout, unknown.stderr.split("\n")[0]]).toEqual([
      2,
      "",
      "error: unknown option '--target'",
    ]);
  }, 300_000);
});
