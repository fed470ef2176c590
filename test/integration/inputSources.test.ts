/**
 * How sources name their input (docs/DESIGN.md "Several inputs"): a declared
 * input's subfolder of the landing folder, HTTP `?input=`, `ingest --input`;
 * an undeclared name is refused with the declared ones, nothing landed.
 */
import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadPipelines, type PipelineConfig } from "../../src/config/pipelines.js";
import { landPendingFiles } from "../../src/ingest/landingFolder.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();

const line = (id: string, hm: string, v: number) => JSON.stringify({ id, t: `2026-10-01T${hm}:00Z`, v });

/** Pipeline `feeds` (inputs a: 5 minutes, b: 25 minutes) with its landing folder: a/1.jsonl, b/2.jsonl, root.jsonl, and zz/3.jsonl in an undeclared folder. */
function setup(): { dir: string; config: string; p: PipelineConfig } {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-inputs-"));
  const landing = path.join(dir, "landing");
  for (const sub of ["a", "b", "zz"]) mkdirSync(path.join(landing, sub), { recursive: true });
  writeFileSync(path.join(landing, "a", "1.jsonl"), [line("a1", "12:22", 1), line("a2", "12:36", 2)].join("\n") + "\n");
  writeFileSync(path.join(landing, "b", "2.jsonl"), line("b1", "12:45", 10) + "\n");
  writeFileSync(path.join(landing, "root.jsonl"), line("d1", "12:00", 1000) + "\n");
  writeFileSync(path.join(landing, "zz", "3.jsonl"), line("z1", "12:00", 5) + "\n");
  const config = path.join(dir, "pipelines.yaml");
  writeFileSync(
    config,
    `pipelines:
  - name: feeds
    source: { landingDir: landing, format: jsonl }
    fields: { eventId: id, eventTime: t, value: v }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes, inputs: { a: { delay: 5 minutes }, b: { delay: 25 minutes } } }
`,
  );
  return { dir, config, p: loadPipelines(config)[0]! };
}

async function bronzeInputs(name: string) {
  const { pool } = await getDb();
  const { rows } = await pool.query(
    "SELECT (SELECT name FROM straggler.bronze_sources WHERE id = source_id) AS source, coalesce(input, 'default') AS input, count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 GROUP BY 1, 2 ORDER BY 1",
    [name],
  );
  return rows;
}

let api: RunningApi | undefined;
afterAll(() => api?.close());

describe("sources name their input", () => {
  it("the landing folder: files in a declared input's subfolder land as that input, the folder's own as default; an undeclared folder is refused by name, not read", async () => {
    const { pool } = await getDb();
    const { p, dir } = setup();
    const old = new Date("2026-01-01T00:00:00Z");
    for (const f of ["a/1.jsonl", "b/2.jsonl", "root.jsonl"]) utimesSync(path.join(dir, "landing", f), old, old);
    const pass = await landPendingFiles(pool, p);
    expect(pass.landed.map((r) => r.source)).toEqual(["a/1.jsonl", "b/2.jsonl", "root.jsonl"]);
    expect([pass.refused, pass.waiting]).toEqual([
      [
        {
          name: "zz/",
          reason:
            "a subfolder that is not an input declared in watermark.inputs (declared: a, b): its files are not landed; move them into the landing folder under names of their own, or declare the input",
        },
      ],
      [],
    ]);
    expect(await bronzeInputs(p.name)).toEqual([
      { source: "a/1.jsonl", input: "a", n: 2 },
      { source: "b/2.jsonl", input: "b", n: 1 },
      { source: "root.jsonl", input: "default", n: 1 },
    ]);
    const b0 = await runBatch(pool, p, "once");
    // a 12:36 − 5 = 12:31, b 12:45 − 25 = 12:20, default 12:00 − 10 = 11:50: the min is 11:50.
    expect(b0!.inputs.map((i) => [i.input, i.watermark])).toEqual([
      ["a", "2026-10-01T12:31:00.000Z"],
      ["b", "2026-10-01T12:20:00.000Z"],
      ["default", "2026-10-01T11:50:00.000Z"],
    ]);
    expect(b0!.nextWatermark).toBe("2026-10-01T11:50:00.000Z");
    // The progress view and the REST API show each input's max event time and watermark.
    api = await startApi({ pool, pipelines: [p], log: createLogger("silent"), token: undefined });
    const progress = (await (await fetch(`${api.base}/pipelines/feeds/progress`)).json()) as { inputs: unknown }[];
    expect(progress[0]!.inputs).toEqual([
      {
        input: "a",
        maxEventTime: "2026-10-01T12:36:00.000Z",
        watermark: "2026-10-01T12:31:00.000Z",
        lastIngestionTime: expect.any(String),
        idle: false,
      },
      {
        input: "b",
        maxEventTime: "2026-10-01T12:45:00.000Z",
        watermark: "2026-10-01T12:20:00.000Z",
        lastIngestionTime: expect.any(String),
        idle: false,
      },
      {
        input: "default",
        maxEventTime: "2026-10-01T12:00:00.000Z",
        watermark: "2026-10-01T11:50:00.000Z",
        lastIngestionTime: expect.any(String),
        idle: false,
      },
    ]);
    const [listed] = (await (await fetch(`${api.base}/pipelines`)).json()) as {
      watermark: string;
      inputs: { input: string; watermark: string }[];
    }[];
    expect([listed!.watermark, listed!.inputs.map((i) => `${i.input} ${i.watermark}`)]).toEqual([
      "2026-10-01T11:50:00.000Z",
      ["a 2026-10-01T12:31:00.000Z", "b 2026-10-01T12:20:00.000Z", "default 2026-10-01T11:50:00.000Z"],
    ]);
  });

  it("HTTP ?input= lands as a declared input; an undeclared one is a 400 naming the declared inputs, nothing landed", async () => {
    const { pool } = await getDb();
    const { p } = setup();
    const named = { ...p, name: "posted" };
    const running = await startApi({ pool, pipelines: [named], log: createLogger("silent"), token: "secret" });
    try {
      const post = (query: string) =>
        fetch(`${running.base}/pipelines/posted/events${query}`, {
          method: "POST",
          headers: { "content-type": "application/x-ndjson", authorization: "Bearer secret" },
          body: line("h1", "12:40", 7) + "\n",
        });
      const ok = await post("?input=b");
      expect(ok.status).toBe(201);
      const bad = await post("?input=c");
      expect([bad.status, await bad.json()]).toEqual([
        400,
        {
          error: "invalid_request",
          message: 'query.input: pipeline posted has no input "c"; its inputs are default, a, b (watermark.inputs)',
        },
      ]);
      const rows = (
        await pool.query(
          "SELECT coalesce(input, 'default') AS input, count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = 'posted' GROUP BY 1",
        )
      ).rows;
      expect(rows).toEqual([{ input: "b", n: 1 }]);
    } finally {
      await running.close();
    }
  });

  it("ingest --input lands the named files as that input; an undeclared one is exit 2 naming the declared inputs", async () => {
    const { url, pool } = await getDb();
    const { dir, config } = setup();
    const env = { DATABASE_URL: url, STRAGGLER_PIPELINES: config };
    const file = path.join(dir, "extra.jsonl");
    writeFileSync(file, line("x1", "12:50", 3) + "\n");
    const bad = await startCli(["ingest", "-p", "feeds", "--input", "c", file], env).done;
    expect([bad.code, bad.stderr.trim()]).toEqual([
      2,
      'straggler: pipeline feeds has no input "c"; its inputs are default, a, b (watermark.inputs)',
    ]);
    const ok = await startCli(["ingest", "-p", "feeds", "--input", "a", "--stream", file], env).done;
    expect(ok.code).toBe(0);
    const rows = (
      await pool.query(
        "SELECT (SELECT name FROM straggler.bronze_sources WHERE id = source_id) AS source, coalesce(input, 'default') AS input FROM straggler.bronze_events WHERE pipeline = 'feeds' AND source_id = (SELECT id FROM straggler.bronze_sources WHERE pipeline = 'feeds' AND name = 'extra.jsonl')",
      )
    ).rows;
    expect(rows).toEqual([{ source: "extra.jsonl", input: "a" }]);
    // After the first test's batch, a's 12:50 moves a to 12:45; b (12:20) and default (11:50) hold the min.
    const status = await startCli(["status", "-p", "feeds"], env).done;
    expect(status.stdout.split("\n").slice(3, 7)).toEqual([
      expect.stringMatching(/^  watermark: {13}2026-10-01T11:50:00\.000Z, /),
      expect.stringMatching(
        /^    input a: watermark 2026-10-01T12:45:00\.000Z, max event time 2026-10-01T12:50:00\.000Z, last sent /,
      ),
      expect.stringMatching(
        /^    input b: watermark 2026-10-01T12:20:00\.000Z, max event time 2026-10-01T12:45:00\.000Z, last sent /,
      ),
      expect.stringMatching(
        /^    input default: watermark 2026-10-01T11:50:00\.000Z, max event time 2026-10-01T12:00:00\.000Z, last sent /,
      ),
    ]);
  }, 300_000); // three CLI processes: minutes on a loaded machine
});
