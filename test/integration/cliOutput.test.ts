/**
 * What the one-shot commands print: text for people on stdout and nothing on
 * stderr when all goes well (logs are quiet unless asked for), and with
 * `--json` one JSON document on stdout whose numbers are the REST API's.
 */
import { chmodSync, mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelines } from "../../src/config/pipelines.js";
import { reconcileReport, sourcesResponse } from "../../src/http/responses.js";
import { correctionSummary, landResponse } from "../../src/http/schemas.js";
import { createLogger } from "../../src/log.js";
import { explainSummary } from "../../src/observe/explainText.js";
import { startApi } from "../helpers/api.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();
const at = (minutes: number) => new Date(Date.parse("2026-10-01T00:00:00Z") + minutes * 60_000).toISOString();
const line = (id: string, t: number, i: number, v: number) => JSON.stringify({ id, t: at(t), i: at(i), k: "a", v });

/** A TCP port nothing listens on (taken from the OS, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A pipeline `shop` (10-minute windows, 10-minute delay) with its landing folder, and a pipeline `replayed` over the same rows. */
async function setup() {
  const { url, pool } = await getDb();
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-cli-output-"));
  const landing = path.join(dir, "landing");
  mkdirSync(landing);
  const rows = [
    line("e1", 1, 2, 10),
    line("e2", 12, 13, 20),
    line("e3", 40, 41, 30),
    line("e4", 25, 42, 5),
    '{"id":"bad","t":"never","i":"2026-10-01T00:43:00Z","k":"a","v":1}',
  ];
  writeSettled(path.join(landing, "a.jsonl"), rows.join("\n") + "\n");
  const config = path.join(dir, "pipelines.yaml");
  const item = (name: string, extra: string) => `
  - name: ${name}
    source: { landingDir: landing, format: jsonl }
    fields: { eventId: id, eventTime: t, ingestionTime: i, groupKey: [k], value: v }
    timestamps: { format: iso8601 }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }${extra}
`;
  writeFileSync(
    config,
    `pipelines:${item("shop", "")}${item("replayed", "\n    replay: { arrivalField: i, batchSpan: 1 minute }")}`,
  );
  const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: config };
  const api = await startApi({ pool, pipelines: loadPipelines(config), log: createLogger("silent"), token: undefined });
  const get = async (route: string) => (await fetch(`${api.base}${route}`)).json();
  return { env, landing, api, get };
}

/** Runs `straggler <args>`; expects exit 0, no log line on stdout and nothing on stderr (unless `stderr` says what). */
async function cli(
  env: Record<string, string>,
  args: string[],
  stderr: (text: string) => void = (text) => expect(text).toBe(""),
): Promise<string> {
  const r = await startCli(args, env).done;
  expect([args.join(" "), r.code]).toEqual([args.join(" "), 0]);
  stderr(r.stderr);
  expect(r.stdout.split("\n").filter((l) => l.startsWith('{"level"'))).toEqual([]);
  return r.stdout;
}

/** Writes a landing file modified a minute ago, so the landing's settle check (2 s unchanged) never makes it wait. */
function writeSettled(file: string, text: string): void {
  writeFileSync(file, text);
  const past = new Date(Date.now() - 60_000);
  utimesSync(file, past, past);
}

describe("one-shot commands' output", () => {
  it("prints text for people on stdout, nothing on stderr; --json prints one document with the API's numbers", async () => {
    const { env, landing, api, get } = await setup();
    try {
      expect(await cli(env, ["migrate"])).toBe("migrations applied (external database)\n");
      expect(JSON.parse(await cli(env, ["migrate", "--json"]))).toEqual({ migrated: true, database: "external" });

      // ingest: the summary line, a line per file, and its batches.
      const ingested = await cli(env, ["ingest", "-p", "shop", "--stream"]);
      expect(ingested.split("\n").slice(0, 2)).toEqual([
        "shop: 1 source landed (5 rows: 4 accepted, 1 quarantined)",
        "shop: a.jsonl: landed 5, accepted 4, quarantined 1 (PARSE_FAIL=1)",
      ]);
      expect(ingested).toMatch(/^shop batch 0: 4 rows in \d+ ms/m);

      // A late event (its window [00:00, 00:10) ended before the watermark, 00:30), landed with --json.
      writeSettled(path.join(landing, "b.jsonl"), line("late1", 3, 50, 100) + "\n");
      const landedJson = JSON.parse(await cli(env, ["ingest", "-p", "shop", "--stream", "--json"]));
      expect(landedJson).toMatchObject({
        pipeline: "shop",
        skipped: ["a.jsonl"],
        refused: [],
        changed: [],
        waiting: [],
      });
      expect(landedJson.landed.map((l: unknown) => landResponse.parse(l))).toEqual(landedJson.landed);
      expect(
        landedJson.landed.map((l: { source: string; landed: number; accepted: number }) => [
          l.source,
          l.landed,
          l.accepted,
        ]),
      ).toEqual([["b.jsonl", 1, 1]]);
      expect(
        landedJson.batches.map((b: { numInputRows: number; numRowsDroppedByWatermark: number }) => [
          b.numInputRows,
          b.numRowsDroppedByWatermark,
        ]),
      ).toEqual([[1, 1]]);

      // status: text, and --json with the numbers of GET /pipelines.
      const status = await cli(env, ["status", "-p", "shop"]);
      const summary1 =
        "1 pipeline: 0 alerts firing, 0 refused by policy, 0 held; backlog 0 rows, 1 windows awaiting correction, 0 failed windows";
      expect(status.split("\n").slice(0, 8)).toEqual([
        summary1,
        "",
        "shop",
        "  watermark:             2026-10-01T00:30:00.000Z, 10 minutes behind the max event time 2026-10-01T00:40:00.000Z",
        "  stream:                2 batches, offset 6; backlog 0 rows",
        "  ledger:                6 landed = 5 accepted + 1 quarantined (PARSE_FAIL 1)",
        "  dropped by watermark:  1 (event, window) pairs; 1 windows awaiting correction",
        "  windows:               1 open, 3 final, 0 corrected; 0 failed",
      ]);
      // Every pipeline (the default -p all): the summary over both, the first --limit blocks, how many more; --json has them all.
      const blocks = (await cli(env, ["status", "--limit", "1"])).split("\n");
      expect([blocks[0], blocks[1], blocks[2], blocks.slice(-3)]).toEqual([
        "2 pipelines: 0 alerts firing, 0 refused by policy, 0 held; backlog 0 rows, 1 windows awaiting correction, 0 failed windows",
        "",
        "shop",
        ["", "… and 1 more pipelines (--limit N shows more, --json all)", ""],
      ]);
      expect(blocks.filter((l) => l === "replayed")).toEqual([]);
      expect(await cli(env, ["status", "--limit", "0"])).toBe(
        `${blocks[0]}\n\n… and 2 more pipelines (--limit N shows more, --json all)\n`,
      );
      expect(
        (JSON.parse(await cli(env, ["status", "--limit", "0", "--json"])) as { pipeline: string }[]).map(
          (p) => p.pipeline,
        ),
      ).toEqual(["shop", "replayed"]);
      const [statusJson] = JSON.parse(await cli(env, ["status", "-p", "shop", "--json"]));
      const [apiRow] = (await get("/pipelines")).filter((p: { pipeline: string }) => p.pipeline === "shop");
      for (const field of [
        "ledger",
        "windows",
        "numRowsDroppedByWatermark",
        "backlogRows",
        "sources",
        "failedWindows",
        "alerts",
      ]) {
        expect([field, statusJson[field]]).toEqual([field, apiRow[field]]);
      }
      expect([statusJson.checkpoint.watermark, statusJson.checkpoint.maxEventTime]).toEqual([
        apiRow.watermark,
        apiRow.maxEventTime,
      ]);

      // correct: the run, its windows, and where to read more (public views only).
      const corrected = (await cli(env, ["correct", "-p", "shop"])).split("\n");
      const runId = Number(
        /^shop: correction run (\d+) succeeded: 1 windows examined, 1 changed, 1 late events recovered, \d+ ms$/.exec(
          corrected[0]!,
        )?.[1],
      );
      expect(corrected.slice(1)).toEqual([
        "  a [2026-10-01T00:00:00.000Z, 2026-10-01T00:10:00.000Z) count 1 -> 2, sum 10 -> 110 (revision 2, 1 late events)",
        `  read: straggler.window_results (the windows now), straggler.correction_audit WHERE run_id = ${runId} (each window before and after), straggler.correction_history (the runs)`,
        "",
      ]);
      expect(corrected.join("\n")).not.toMatch(
        /straggler\.(corrections|correction_runs|late_windows|window_results_table)\b/,
      );

      writeSettled(path.join(landing, "c.jsonl"), line("late2", 15, 55, 1000) + "\n");
      await cli(env, ["ingest", "-p", "shop", "--stream"]);
      const [summary] = JSON.parse(await cli(env, ["correct", "-p", "shop", "--json"]));
      expect(correctionSummary.parse(summary)).toEqual(summary);
      const run = await get(`/pipelines/shop/corrections/${summary.runId}`);
      expect([run.run.windows_changed, run.run.events_recovered, run.changes.length]).toEqual([
        summary.windowsChanged,
        summary.eventsRecovered,
        summary.changes.length,
      ]);
      expect(summary).toMatchObject({ status: "succeeded", windowsChanged: 1, eventsRecovered: 1 });

      // reconcile, sources, lateness: --json is the API's answer.
      const reconciled = await cli(env, ["reconcile", "-p", "shop"]);
      expect(reconciled).toBe(
        "shop: 3 final windows checked, 0 mismatches; ledger landed 7 = accepted 6 + quarantined 1 (balanced); backlog 0 rows\n",
      );
      const [reconcileJson] = JSON.parse(await cli(env, ["reconcile", "-p", "shop", "--json"]));
      expect(reconcileJson).toEqual(reconcileReport.parse(await get("/pipelines/shop/reconcile")));
      const sourcesJson = JSON.parse(await cli(env, ["sources", "-p", "shop", "--json"]));
      expect({ byState: sourcesJson.byState, rows: sourcesJson.rows }).toEqual(
        sourcesResponse.parse(await get("/pipelines/shop/sources")),
      );
      expect(JSON.parse(await cli(env, ["lateness", "-p", "shop", "--json"]))).toEqual(
        await get("/pipelines/shop/lateness"),
      );
      // explain: --json is the API's answer; the text starts with its summary line, then a line per revision.
      const history = JSON.parse(
        await cli(env, ["explain", "-p", "shop", "--window", "2026-10-01T00:00:00Z", "--key", "a", "--json"]),
      );
      expect(history).toEqual(await get("/pipelines/shop/windows/history?start=2026-10-01T00:00:00Z&key=a"));
      const explained = (
        await cli(env, ["explain", "-p", "shop", "--window", "2026-10-01T00:00:00Z", "--key", "a"])
      ).split("\n");
      expect(
        explained
          .slice(0, 1 + history.revisions.length)
          .map((l) => l.replace(/ \d{4}-\d{2}-\d{2}T[\d:.]+Z {2}/, " T  ")),
      ).toEqual([
        explainSummary(history),
        "  1. T  micro-batch 0 (watermark none → 2026-10-01T00:30:00.000Z, 1 event added): — → 10 (count 1)  final",
        `  2. T  correction run ${runId} (cli; 1 late event): 10 (count 1) → 110 (count 2)  corrected, revision 2`,
      ]);

      // replay: progress (not logs) on stderr; --json with the status the API reads.
      const replayed = JSON.parse(
        await cli(env, ["replay", "-p", "replayed", "--json"], (text) =>
          expect(text.split("\n").filter((l) => l.startsWith("{"))).toEqual([]),
        ),
      );
      expect(replayed).toMatchObject({ pipeline: "replayed", files: 3, rowsLanded: 7, refused: [] });
      const [replayedRow] = (await get("/pipelines")).filter((p: { pipeline: string }) => p.pipeline === "replayed");
      expect([replayed.status.ledger, replayed.status.numRowsDroppedByWatermark]).toEqual([
        replayedRow.ledger,
        replayedRow.numRowsDroppedByWatermark,
      ]);
    } finally {
      await api.close();
    }
  }, 900_000); // each command is bounded by startCli's own timeout, which names it

  it("on the embedded database too: quiet by default; logs come back on stderr with --verbose or STRAGGLER_LOG_LEVEL, never on stdout", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "straggler-cli-quiet-"));
    chmodSync(dataDir, 0o755); // as root, the embedded server runs as a user of its own, which must reach its folder
    const env = { DATABASE_URL: "", STRAGGLER_EMBEDDED_PORT: String(await freePort()), STRAGGLER_DATA_DIR: dataDir };
    // The first run initialises the server (an info log) and starts it (another): neither is shown.
    expect(await startCli(["migrate"], env).done).toMatchObject({
      code: 0,
      stdout: "migrations applied (embedded database)\n",
      stderr: "",
    });
    const logged = (stderr: string) =>
      stderr
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => (JSON.parse(l) as { level: number; msg: string }).msg);
    for (const [args, extra] of [
      [["--verbose", "migrate"], {}],
      [["migrate"], { STRAGGLER_LOG_LEVEL: "info" }],
    ] as const) {
      const r = await startCli([...args], { ...env, ...extra }).done;
      expect([r.code, r.stdout, logged(r.stderr)]).toEqual([
        0,
        "migrations applied (embedded database)\n",
        ["embedded PostgreSQL started"],
      ]);
    }
    const bad = await startCli(["migrate"], { ...env, STRAGGLER_LOG_LEVEL: "loud" }).done;
    expect([bad.code, bad.stdout, bad.stderr]).toEqual([
      2,
      "",
      "straggler: invalid environment:\n  STRAGGLER_LOG_LEVEL: expected fatal|error|warn|info|debug|trace|silent\n",
    ]);
  }, 900_000); // each command is bounded by startCli's own timeout, which names it
});
