/**
 * The zone check of a calendar window (src/guards/timeZone.ts): a zone Node
 * knows and PostgreSQL does not (`US/Pacific-New`) refuses the pipeline when it
 * starts — micro-batch, correction, reconcile, CLI exit 2, status and
 * GET /pipelines — naming window.timeZone and the value, instead of failing
 * every batch with PostgreSQL's `time zone "…" not recognized`.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { loadPipelines } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { isTimeZoneKnown } from "../../src/db/sql/stream/timeZoneKnown.js";
import { landFile } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { checkPolicy, TimeZoneRefusedError } from "../../src/guards/index.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { StreamLoop } from "../../src/stream/streamLoop.js";
import { startApi } from "../helpers/api.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline, seedDir } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

const MESSAGE =
  'pipeline zone-check is not streamed: window.timeZone: "US/Pacific-New" is not a time zone PostgreSQL knows (pg_timezone_names); write a zone both Straggler and PostgreSQL know (Straggler reads this one as "America/Los_Angeles")';

const raw = (timeZone: string) => ({
  name: "zone-check",
  source: { landingDir: seedDir("future-outlier"), format: "csv" },
  fields: { eventId: "RawID", eventTime: "EventTimestampRaw", ingestionTime: "IngestionTime", value: "Payload" },
  window: { type: "tumbling", size: "1 day", timeZone },
  watermark: { delay: "5 minutes" },
});

async function thrown(run: Promise<unknown>): Promise<unknown> {
  return run.then(
    () => undefined,
    (err: unknown) => err,
  );
}

describe("calendar window zone check against PostgreSQL", () => {
  it("knows zones case-insensitively, as PostgreSQL reads them, and not US/Pacific-New", async () => {
    const { pool } = await getDb();
    expect(await isTimeZoneKnown(pool, "America/New_York")).toBe(true);
    expect(await isTimeZoneKnown(pool, "us/pacific")).toBe(true);
    expect(await isTimeZoneKnown(pool, "EST")).toBe(true);
    expect(await isTimeZoneKnown(pool, "US/Pacific-New")).toBe(false);
  });

  it("refuses the micro-batch, the correction and reconcile, naming window.timeZone; nothing written; status says why", async () => {
    const { pool } = await getDb();
    const p = pipeline(raw("US/Pacific-New"));
    await landFile(pool, p, path.join(p.source.landingDir!, "batch1.csv"), "batch1.csv");
    for (const run of [
      () => runBatch(pool, p, "once"),
      () => runCorrection(pool, p, { trigger: "cli" }),
      () => reconcile(pool, p),
    ]) {
      const e = await thrown(run());
      expect(e).toBeInstanceOf(TimeZoneRefusedError);
      expect((e as Error).message).toBe(MESSAGE);
    }
    expect(await checkPolicy(pool, p)).toEqual({
      state: "refused",
      policyVersion: expect.stringMatching(/^[0-9a-f]{16}$/),
      live: null,
      changes: [],
      message: MESSAGE,
    });
    const written = await pool.query(
      "SELECT (SELECT count(*)::int FROM straggler.results_versions WHERE pipeline = $1) AS versions, (SELECT count(*)::int FROM straggler.correction_runs WHERE pipeline = $1) AS runs, (SELECT count(*)::int FROM straggler.window_results WHERE pipeline = $1) AS windows",
      ["zone-check"],
    );
    expect(written.rows).toEqual([{ versions: 0, runs: 0, windows: 0 }]);
    // A zone both know streams.
    const ok = pipeline({ ...raw("america/los_angeles"), name: "zone-ok" });
    await landFile(pool, ok, path.join(ok.source.landingDir!, "batch1.csv"), "batch1.csv");
    expect((await runBatch(pool, ok, "once"))?.numInputRows).toBe(2);
    expect((await checkPolicy(pool, ok)).state).toBe("live");
  });

  it("the service's stream loop logs the refusal once, not every retry", async () => {
    const { pool } = await getDb();
    const p = pipeline({ ...raw("US/Pacific-New"), name: "zone-loop" });
    await landFile(pool, p, path.join(p.source.landingDir!, "batch1.csv"), "batch1.csv");
    const lines: { level: number; msg: string }[] = [];
    const log = pino(
      { level: "info" },
      { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) },
    );
    let attempts = 0;
    let stop: () => void = () => undefined;
    const fourAttempts = new Promise<void>((r) => (stop = r));
    const loop = new StreamLoop(
      { ...p, trigger: { ...p.trigger, interval: 1 } },
      {
        landPending: async () => undefined,
        runBatch: (t) => {
          if (++attempts >= 4) stop();
          return runBatch(pool, p, t);
        },
        log,
      },
    );
    loop.start();
    await fourAttempts;
    await loop.stop();
    expect(attempts).toBeGreaterThanOrEqual(4);
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([MESSAGE.replace("zone-check", "zone-loop")]);
  });

  it("CLI: stream, correct and reconcile exit 2 with the message; status and GET /pipelines show the pipeline refused", async () => {
    const { pool, url } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "zone-check-"));
    const config = path.join(dir, "pipelines.yaml");
    writeFileSync(
      config,
      `pipelines:
  - name: zone-check
    source: { landingDir: ${JSON.stringify(seedDir("future-outlier"))}, format: csv }
    fields: { eventId: RawID, eventTime: EventTimestampRaw, ingestionTime: IngestionTime, value: Payload }
    window: { type: tumbling, size: 1 day, timeZone: US/Pacific-New }
    watermark: { delay: 5 minutes }
`,
    );
    const cli = (...args: string[]) => startCli(["-c", config, ...args], { DATABASE_URL: url }).done;
    expect((await cli("ingest", "-p", "zone-check", path.join(seedDir("future-outlier"), "batch1.csv"))).code).toBe(0);
    for (const command of ["stream", "correct", "reconcile"]) {
      const run = await cli(command, "-p", "zone-check");
      expect([command, run.code, run.stdout, run.stderr]).toEqual([command, 2, "", `straggler: ${MESSAGE}\n`]);
    }
    const status = await cli("status", "-p", "zone-check", "--json");
    expect(JSON.parse(status.stdout)[0].policy).toMatchObject({
      state: "refused",
      live: null,
      changes: [],
      message: MESSAGE,
    });
    const text = await cli("status", "-p", "zone-check");
    expect(text.stdout).toContain(`  policy:                REFUSED: ${MESSAGE}\n`);
    const api = await startApi({ pool, pipelines: loadPipelines(config), log: createLogger("silent"), token: "t0ken" });
    try {
      const rows = (await (await fetch(`${api.base}/pipelines`)).json()) as {
        pipeline: string;
        policy: { state: string; message: string };
      }[];
      expect(rows.map((r) => [r.pipeline, r.policy.state, r.policy.message])).toEqual([
        ["zone-check", "refused", MESSAGE],
      ]);
    } finally {
      await api.close();
    }
  }, 180_000);

  it("CLI -p all: the refused pipeline is reported on stderr, the next one is still corrected and reconciled; exit 2", async () => {
    const { pool, url } = await getDb();
    const config = refusedThenKnown("zone-ok");
    const cli = (...args: string[]) => startCli(["-c", config, ...args], { DATABASE_URL: url }).done;
    expect((await cli("ingest", "-p", "zone-ok", path.join(seedDir("future-outlier"), "batch1.csv"))).code).toBe(0);
    expect((await cli("stream", "-p", "zone-ok")).code).toBe(0);

    const correct = await cli("correct", "-p", "all", "--json");
    expect([correct.code, correct.stderr]).toEqual([2, `straggler: ${MESSAGE}\n`]);
    const summaries = JSON.parse(correct.stdout) as { pipeline: string; status: string }[];
    expect(summaries.map((s) => [s.pipeline, s.status])).toEqual([["zone-ok", "succeeded"]]);
    const runs = await pool.query(
      "SELECT pipeline, count(*)::int AS runs FROM straggler.correction_runs GROUP BY pipeline ORDER BY pipeline",
    );
    expect(runs.rows).toEqual([{ pipeline: "zone-ok", runs: 1 }]);

    const reconciled = await cli("reconcile", "-p", "all", "--json");
    expect([reconciled.code, reconciled.stderr]).toEqual([2, `straggler: ${MESSAGE}\n`]);
    const reports = JSON.parse(reconciled.stdout) as { pipeline: string; ok: boolean }[];
    expect(reports.map((r) => [r.pipeline, r.ok])).toEqual([["zone-ok", true]]);
  }, 180_000);
  it("CLI stream -p all --once: the refused pipeline is reported on stderr, the next one is still streamed; exit 2", async () => {
    const { pool, url } = await getDb();
    const config = refusedThenKnown("zone-day");
    const cli = (...args: string[]) => startCli(["-c", config, ...args], { DATABASE_URL: url }).done;
    expect((await cli("ingest", "-p", "zone-day", path.join(seedDir("future-outlier"), "batch1.csv"))).code).toBe(0);

    const streamed = await cli("stream", "-p", "all", "--once");
    expect([streamed.code, streamed.stderr]).toEqual([2, `straggler: ${MESSAGE}\n`]);
    expect(streamed.stdout).toMatch(/^zone-day: 1 micro-batch, 2 rows, .*\nzone-day batch 0: 2 rows/);
    const windows = await pool.query(
      "SELECT pipeline, window_start, window_end, event_count, value_sum FROM straggler.window_results WHERE pipeline IN ('zone-check', 'zone-day') ORDER BY pipeline, window_start",
    );
    // One local day in Los Angeles (PDT, UTC−7) holds both events; the refused pipeline wrote nothing.
    expect(windows.rows).toEqual([
      {
        pipeline: "zone-day",
        window_start: "2026-09-19T07:00:00.000Z",
        window_end: "2026-09-20T07:00:00.000Z",
        event_count: 2,
        value_sum: "30",
      },
    ]);
  }, 180_000);
});

/**
 * A pipelines file with two daily pipelines over the future-outlier seed: `zone-check` in a zone
 * PostgreSQL does not know (US/Pacific-New), then `second` in America/Los_Angeles.
 * @returns the file's path
 */
function refusedThenKnown(second: string): string {
  const config = path.join(mkdtempSync(path.join(tmpdir(), "zone-check-all-")), "pipelines.yaml");
  const entry = (name: string, timeZone: string) => `  - name: ${name}
    source: { landingDir: ${JSON.stringify(seedDir("future-outlier"))}, format: csv }
    fields: { eventId: RawID, eventTime: EventTimestampRaw, ingestionTime: IngestionTime, value: Payload }
    window: { type: tumbling, size: 1 day, timeZone: ${timeZone} }
    watermark: { delay: 5 minutes }
`;
  writeFileSync(config, `pipelines:\n${entry("zone-check", "US/Pacific-New")}${entry(second, "America/Los_Angeles")}`);
  return config;
}
