/**
 * Holds (README "Incidents: hold"): while a pipeline is held, the public view
 * serves exactly what it served when the hold began, every row held; the
 * stream and corrections go on underneath; a release publishes everything in
 * one step. Rules in the pipelines file hold a pipeline by themselves.
 */
import path from "node:path";
import { Readable } from "node:stream";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { holdPipeline, releasePipeline } from "../../src/lifecycle/hold.js";
import { holdResponse } from "../../src/http/holdRoutes.js";
import { createLogger } from "../../src/log.js";
import { runBatch, type BatchResult } from "../../src/stream/runBatch.js";
import { startApi } from "../helpers/api.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { waitFor } from "../helpers/service.js";
import { pipeline, seedDir } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "test-token-0123456789abcdef";

/** What a dashboard sees: `"[12:00,12:10)=2 open held"` per row of `straggler.window_results`. */
async function dashboard(pool: Pool, name: string): Promise<string[]> {
  const { rows } = await pool.query(
    "SELECT group_key, window_start, window_end, event_count, value_sum, status, held FROM straggler.window_results WHERE pipeline = $1 ORDER BY group_key, window_start",
    [name],
  );
  return rows.map(
    (w) =>
      `${w.group_key ? `${w.group_key} ` : ""}[${w.window_start.slice(11, 16)},${w.window_end.slice(11, 16)})=${w.event_count}/${w.value_sum} ${w.status}${w.held ? " held" : ""}`,
  );
}

/** The private results table, under the view: what the stream has written. */
async function underneath(pool: Pool, name: string): Promise<string[]> {
  const { rows } = await pool.query(
    "SELECT window_start, event_count FROM straggler.window_results_table WHERE pipeline = $1 ORDER BY window_start",
    [name],
  );
  return rows.map((w) => `${w.window_start.slice(11, 16)}=${w.event_count}`);
}

const guarded = (name: string, hold: Record<string, unknown>): PipelineConfig =>
  pipeline({
    name,
    source: { landingDir: seedDir("future-outlier"), format: "csv" },
    fields: { eventId: "RawID", eventTime: "EventTimestampRaw", ingestionTime: "IngestionTime", value: "Payload" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "5 minutes" },
    admission: { maxFutureSkew: "1 hour" },
    hold,
  });

const land = (pool: Pool, p: PipelineConfig, file: string) =>
  landFile(pool, p, path.join(seedDir("future-outlier"), file), file);

/** JSON lines of `n` events in key `k` at 12:0x, `bad` of them without a parseable time. */
function lines(prefix: string, n: number, bad: number, key = "a", value = 1): string {
  return Array.from({ length: n }, (_, i) =>
    JSON.stringify({ id: `${prefix}-${i}`, t: i < bad ? "never" : `2026-09-19T12:0${i % 10}:00Z`, k: key, v: value }),
  ).join("\n");
}

describe("holds", () => {
  it("onFutureTs: a FUTURE_TS row holds the pipeline before its batch is published; dashboards keep the pre-hold values while the stream and corrections advance; release shows the new values", async () => {
    const { pool } = await getDb();
    const p = guarded("hold-future", { onFutureTs: true });
    await land(pool, p, "batch1.csv");
    expect((await runBatch(pool, p, "once"))!.holdOpened).toBeUndefined();
    expect(await dashboard(pool, p.name)).toEqual(["[12:00,12:10)=2/30 open"]);

    await land(pool, p, "batch2.csv"); // row 3 accepted, row 4 (14:00, ingested 12:10) FUTURE_TS
    const tripped = (await runBatch(pool, p, "once")) as BatchResult;
    const seq4 = (await pool.query("SELECT seq FROM straggler.bronze WHERE pipeline = $1 AND event_id = '4'", [p.name]))
      .rows[0].seq as number;
    expect(tripped.holdOpened).toMatchObject({
      pipeline: p.name,
      rule: "onFutureTs",
      batchId: 1,
      releasedAt: null,
      reason: `rule hold.onFutureTs: 1 FUTURE_TS row in micro-batch 1 (bronze seq ${seq4})`,
      trippedBy: {
        rowCount: 1,
        rows: [
          {
            seq: seq4,
            eventId: "4",
            reason: "FUTURE_TS",
            detail: "event time is 6600000 ms after its ingestion time (max 3600000 ms)",
          },
        ],
      },
    });
    expect(await dashboard(pool, p.name)).toEqual(["[12:00,12:10)=2/30 open held"]);
    expect(await underneath(pool, p.name)).toEqual(["12:00=3"]);

    // The stream goes on underneath; so does a correction; the dashboard does not move.
    await land(pool, p, "batch3.csv");
    expect((await runBatch(pool, p, "once"))!.holdOpened).toBeUndefined();
    expect((await runCorrection(pool, p, { trigger: "cli" })).status).toBe("succeeded");
    expect(await underneath(pool, p.name)).toEqual(["12:00=5"]);
    expect(await dashboard(pool, p.name)).toEqual(["[12:00,12:10)=2/30 open held"]);
    const api = await startApi({ pool, pipelines: [p], log: createLogger("silent"), token: TOKEN });
    try {
      const served = (await (await fetch(`${api.base}/pipelines/${p.name}/windows`)).json()) as {
        event_count: number;
        held: boolean;
      }[];
      expect(served.map((w) => [w.event_count, w.held])).toEqual([[2, true]]);
    } finally {
      await api.close();
    }

    const released = await releasePipeline(pool, p.name);
    expect([released.holdId, released.rule, released.releasedAt !== null]).toEqual([
      tripped.holdOpened!.holdId,
      "onFutureTs",
      true,
    ]);
    expect(await dashboard(pool, p.name)).toEqual(["[12:00,12:10)=5/80 open"]);
    const history = await pool.query(
      "SELECT rule, batch_id, released_at IS NOT NULL AS released FROM straggler.holds WHERE pipeline = $1",
      [p.name],
    );
    expect(history.rows).toEqual([{ rule: "onFutureTs", batch_id: 1, released: true }]);
  });

  it("quarantineShare: holds when quarantined rows over the last batches pass the share; batches before a release do not count again", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "hold-share",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", groupKey: "k", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "1 hour" },
      hold: { quarantineShare: { above: "20%", batches: 2 } },
    });
    const batch = async (prefix: string, n: number, bad: number) => {
      await landStream(pool, p, Readable.from([lines(prefix, n, bad)]), "test");
      return ((await runBatch(pool, p, "once")) as BatchResult).holdOpened;
    };
    expect(await batch("a", 10, 1)).toBeUndefined(); // 1/10
    expect(await batch("b", 10, 3)).toBeUndefined(); // 4/20 = 20%: not above
    const hold = await batch("c", 10, 4); // b + c: 7/20 = 35%
    expect(hold).toMatchObject({
      rule: "quarantineShare",
      batchId: 2,
      reason: "rule hold.quarantineShare: 7 of 20 rows quarantined (35%) over 2 micro-batches up to 2, above 20%",
    });
    expect(hold!.trippedBy).toMatchObject({ rowCount: 7, rowsRead: 20, share: 0.35, above: 0.2 });
    expect(hold!.trippedBy!.rows.map((r) => r.eventId)).toEqual(["b-0", "b-1", "b-2", "c-0", "c-1", "c-2", "c-3"]);
    expect(await dashboard(pool, p.name)).toEqual(["a [12:00,12:10)=16/16 open held"]);
    await releasePipeline(pool, p.name);
    expect(await dashboard(pool, p.name)).toEqual(["a [12:00,12:10)=22/22 open"]);
    expect(await batch("d", 10, 1)).toBeUndefined(); // only d counts now: 1/10
    expect(await batch("e", 10, 3)).toBeUndefined(); // d + e: 4/20
  });

  it("a release publishes every window at once: concurrent dashboard queries see all held values or all new ones, never a mix", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "hold-step",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", groupKey: "k", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "1 hour" },
    });
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
    await landStream(pool, p, Readable.from([keys.map((k) => lines(`one-${k}`, 1, 0, k, 1)).join("\n")]), "test");
    await runBatch(pool, p, "once");
    expect((await holdPipeline(pool, p.name, "checking a source")).windows).toBe(20);
    await landStream(pool, p, Readable.from([keys.map((k) => lines(`two-${k}`, 1, 0, k, 10)).join("\n")]), "test");
    await runBatch(pool, p, "once");
    const seen = new Set<string>();
    let stop = false;
    const reader = (async () => {
      while (!stop) {
        const { rows } = await pool.query(
          "SELECT string_agg(DISTINCT value_sum::text || (CASE WHEN held THEN ' held' ELSE '' END), ',') AS s FROM straggler.window_results WHERE pipeline = $1",
          [p.name],
        );
        seen.add(rows[0].s);
      }
    })();
    // The reader has seen the held results before the release and the live ones after it (not a fixed wait: a busy machine reads slowly).
    await waitFor("the reader to see the held results", async () => (seen.has("1 held") ? true : undefined));
    await releasePipeline(pool, p.name);
    await waitFor("the reader to see the live results", async () => (seen.has("11") ? true : undefined));
    stop = true;
    await reader;
    expect([...seen].sort()).toEqual(["1 held", "11"]);
  });

  it("by hand: CLI and REST hold and release (with the token), 409 / exit 1 when held already or not held; status, GET /pipelines and straggler_pipeline_held show it", async () => {
    const { pool, url } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-hold-"));
    const config = path.join(dir, "pipelines.yaml");
    writeFileSync(
      config,
      `pipelines:
  - name: hold-hand
    source: { landingDir: ${JSON.stringify(seedDir("future-outlier"))}, format: csv }
    fields: { eventId: RawID, eventTime: EventTimestampRaw, ingestionTime: IngestionTime, value: Payload }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 5 minutes }
`,
    );
    const cli = (...args: string[]) => startCli(["-c", config, ...args], { DATABASE_URL: url }).done;
    expect(
      (await cli("ingest", "-p", "hold-hand", path.join(seedDir("future-outlier"), "batch1.csv"), "--stream")).code,
    ).toBe(0);
    const held = await cli("hold", "-p", "hold-hand", "--reason", "checking the producer's clock");
    expect(held.code).toBe(0);
    expect(held.stdout).toMatch(
      /^hold-hand: held since \S+Z \(hold \d+: checking the producer's clock\); straggler.window_results keeps its 1 windows until `straggler release -p hold-hand`\n$/,
    );
    const again = await cli("hold", "-p", "hold-hand", "--reason", "again");
    expect([again.code, again.stderr]).toEqual([
      1,
      expect.stringMatching(
        /^straggler: pipeline hold-hand is already held, since \S+ \(hold \d+: checking the producer's clock\)\n$/,
      ),
    ]);
    const status = JSON.parse((await cli("status", "-p", "hold-hand", "--json")).stdout);
    expect(status[0].hold).toMatchObject({
      pipeline: "hold-hand",
      reason: "checking the producer's clock",
      rule: null,
      releasedAt: null,
    });
    expect((await cli("status", "-p", "hold-hand")).stdout).toMatch(
      /\n  hold: {18}held since \S+ \(hold \d+: checking the producer's clock\); straggler.window_results serves what it served then\n/,
    );

    const { loadPipelines } = await import("../../src/config/pipelines.js");
    const api = await startApi({ pool, pipelines: loadPipelines(config), log: createLogger("silent"), token: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const post = (route: string, body?: unknown, headers: Record<string, string> = auth) =>
      fetch(`${api.base}/pipelines/hold-hand/${route}`, {
        method: "POST",
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const metric = async () =>
      /^straggler_pipeline_held\{pipeline="hold-hand"\} (\d)$/m.exec(
        await (await fetch(`${api.base}/metrics`)).text(),
      )?.[1];
    try {
      expect(await metric()).toBe("1");
      const pipelines = (await (await fetch(`${api.base}/pipelines`)).json()) as { hold: { reason: string } | null }[];
      expect(pipelines.map((r) => r.hold?.reason)).toEqual(["checking the producer's clock"]);
      const conflict = await post("hold", { reason: "twice" });
      expect([conflict.status, ((await conflict.json()) as { error: string }).error]).toEqual([409, "conflict"]);
      const released = await post("release");
      expect([released.status, ((await released.json()) as { reason: string }).reason]).toEqual([
        200,
        "checking the producer's clock",
      ]);
      expect(await metric()).toBe("0");
      expect((await post("release")).status).toBe(409);
      expect((await post("hold", { reason: "x" }, {})).status).toBe(401);
      const empty = await post("hold", { reason: "  " });
      expect([empty.status, ((await empty.json()) as { message: string }).message]).toEqual([
        400,
        'body.reason: expected a reason, e.g. "future-dated events under investigation"',
      ]);
      const rest = await post("hold", { reason: "incident 42" });
      expect([rest.status, ((await rest.json()) as { windows: number }).windows]).toEqual([201, 1]);
      expect(await dashboard(pool, "hold-hand")).toEqual(["[12:00,12:10)=2/30 open held"]);
    } finally {
      await api.close();
    }
    const cliRelease = await cli("release", "-p", "hold-hand");
    expect([cliRelease.code, cliRelease.stdout]).toEqual([
      0,
      expect.stringMatching(
        /^hold-hand: released hold \d+ \(held since \S+: incident 42\); straggler.window_results shows the live results\n$/,
      ),
    ]);
    const notHeld = await cli("release", "-p", "hold-hand");
    expect([notHeld.code, notHeld.stderr]).toEqual([1, "straggler: pipeline hold-hand is not held\n"]);

    // --json: the REST answers (hold: the hold and its windows; release: the hold released).
    const heldJson = await cli("hold", "-p", "hold-hand", "--reason", "as JSON", "--json");
    const { hold, windows } = JSON.parse(heldJson.stdout) as { hold: Record<string, unknown>; windows: number };
    expect([heldJson.code, holdResponse.parse(hold), windows]).toEqual([0, hold, 1]);
    expect(hold).toMatchObject({ pipeline: "hold-hand", reason: "as JSON", rule: null, releasedAt: null });
    const releasedJson = await cli("release", "-p", "hold-hand", "--json");
    const releasedHold = JSON.parse(releasedJson.stdout) as Record<string, unknown>;
    expect([
      releasedJson.code,
      holdResponse.parse(releasedHold),
      releasedHold.holdId,
      typeof releasedHold.releasedAt,
    ]).toEqual([0, releasedHold, hold.holdId, "string"]);
  }, 180_000); // several CLI processes, each starting and migrating
});
