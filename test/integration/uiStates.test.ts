/**
 * The pipeline pages never summarise a state as "up to date" that is not (README "The pipeline
 * page"): the state badge says what holds the pipeline — a quiet input holding the watermark
 * back, a hold, rows waiting with no batch for a while (stalled), failed windows, windows
 * awaiting correction — and the pipeline page shows each input's watermark. Each state is built
 * for real in PostgreSQL and read from the service's HTML (`/ui` and `/ui/pipelines/{p}`).
 */
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { RawRecord } from "../../src/core/admission.js";
import type { Pool } from "../../src/db/pool.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { landStream } from "../../src/ingest/landFile.js";
import { holdPipeline } from "../../src/lifecycle/hold.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

/** Two declared inputs `a` and `b` (and `default`), the `min` policy, no idle timeout; ingestion time from `it`. */
const twoInputs = (name: string, watermark: Record<string, unknown> = {}): PipelineConfig =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", ingestionTime: "it", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes", inputs: { a: null, b: null }, ...watermark },
    admission: { maxFutureSkew: null },
  });
/** One input, sum of `v` per 10-minute window, 10-minute delay. */
const single = (name: string, extra: Record<string, unknown> = {}): PipelineConfig =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { maxFutureSkew: null },
    ...extra,
  });

let sources = 0;
/** Lands events `[id, event instant, value, ingestion instant]` as one source of `input`. */
async function landInput(
  pool: Pool,
  p: PipelineConfig,
  input: string,
  events: [string, string, number, string][],
): Promise<void> {
  async function* records(): AsyncGenerator<RawRecord> {
    let line = 0;
    for (const [id, t, v, it] of events) {
      const fields = { id, t, v: String(v), it };
      yield { line: ++line, raw: JSON.stringify(fields), fields };
    }
  }
  await landRecords(pool, p, `test:${++sources}`, records(), {
    landingTimeMs: Date.parse("2026-10-02T06:00:00Z"),
    input,
  });
}
const landLines = (pool: Pool, p: PipelineConfig, events: [string, string, number][]) =>
  landStream(
    pool,
    p,
    Readable.from([events.map(([id, t, v]) => JSON.stringify({ id, t, v })).join("\n") + "\n"]),
    `lines:${++sources}`,
  );

/** The list page's badge of each pipeline: `[name, tone, label]`. */
async function listBadges(api: RunningApi): Promise<string[][]> {
  const list = await (await fetch(`${api.base}/ui`)).text();
  return [
    ...list.matchAll(/<tr data-pipeline="([^"]+)">\s*<td>.*?<\/td>\s*<td><span class="badge (\w+)">([^<]*)<\/span>/gs),
  ].map((m) => [m[1]!, m[2]!, unescape(m[3]!)]);
}
/** The pipeline page's badge `[tone, label]`, and the page. */
async function pageBadge(api: RunningApi, name: string): Promise<{ badge: string[]; page: string }> {
  const page = await (await fetch(`${api.base}/ui/pipelines/${name}`)).text();
  const m = /<span class="badge (\w+)" id="state">([^<]*)<\/span>/.exec(page);
  return { badge: [m?.[1] ?? "", unescape(m?.[2] ?? "")], page };
}
const unescape = (t: string) =>
  t
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** The pipeline page's inputs table as `input | delay | watermark | max event time | last sent | role`. */
function inputRows(page: string): string[] {
  const table = /<table class="grid" id="input-table">(.*?)<\/table>/s.exec(page)?.[1] ?? "";
  return [...table.matchAll(/<tr data-input="[^"]+">(.*?)<\/tr>/gs)].map((r) =>
    [...r[1]!.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((c) => unescape(c[1]!)).join(" | "),
  );
}

const quiet = twoInputs("ui-quiet");
const steady = twoInputs("ui-steady", { inputs: { a: { delay: "5 minutes" }, b: { delay: "25 minutes" } } });
const held = single("ui-held");
const backlog = single("ui-backlog");
const stalled = single("ui-stalled");
const failing = single("ui-failed", { admission: { maxFutureSkew: null, maxAbsValue: "1e131000" } });
let api: RunningApi;
let heldAt = "";

beforeAll(async () => {
  const { pool } = await getDb();
  // The case: b last sent at 00:00 (event 00:00); a sends 01:00 … 05:00. b's watermark, 23:50, holds the pipeline's.
  await landInput(pool, quiet, "a", [["a0", "2026-10-02T00:00:00Z", 1, "2026-10-02T00:00:00Z"]]);
  await landInput(pool, quiet, "b", [["b0", "2026-10-02T00:00:00Z", 1, "2026-10-02T00:00:00Z"]]);
  await runBatch(pool, quiet, "once");
  for (const h of ["01", "02", "03", "04", "05"]) {
    await landInput(pool, quiet, "a", [[`a${h}`, `2026-10-02T${h}:00:00Z`, 1, `2026-10-02T${h}:00:00Z`]]);
    await runBatch(pool, quiet, "once");
  }
  // Both inputs keep sending, b 20 minutes behind in event time (its delay is 25 minutes): b holds the watermark by design.
  await landInput(pool, steady, "a", [["a1", "2026-10-02T05:00:00Z", 1, "2026-10-02T05:00:00Z"]]);
  await landInput(pool, steady, "b", [["b1", "2026-10-02T04:40:00Z", 1, "2026-10-02T05:00:00Z"]]);
  await runBatch(pool, steady, "once");
  // Held, up to date.
  await landLines(pool, held, [["h1", "2026-10-01T12:01:00Z", 1]]);
  await runBatch(pool, held, "once");
  heldAt = (await holdPipeline(pool, held.name, "checking a <late> source")).hold.heldAt;
  // A late event: its window [12:00,12:10) awaits correction.
  await landLines(pool, backlog, [
    ["x1", "2026-10-01T12:01:00Z", 1],
    ["x2", "2026-10-01T12:30:00Z", 2],
  ]);
  await runBatch(pool, backlog, "once");
  await landLines(pool, backlog, [["x3", "2026-10-01T12:02:00Z", 4]]);
  await runBatch(pool, backlog, "once");
  // Rows waiting, and the last batch 10 minutes ago: stalled.
  await landLines(pool, stalled, [["s1", "2026-10-01T12:01:00Z", 1]]);
  await runBatch(pool, stalled, "once");
  await landLines(pool, stalled, [
    ["s2", "2026-10-01T12:03:00Z", 1],
    ["s3", "2026-10-01T12:04:00Z", 1],
  ]);
  await pool.query(
    "UPDATE straggler.batch_progress SET timestamp = clock_timestamp() - interval '10 minutes' WHERE pipeline = $1",
    [stalled.name],
  );
  // Two rows accepted under an older policy without the value bound overflow their window's sum: one failed window.
  for (const [i, id] of ["big1", "big2"].entries()) {
    await pool.query(
      `INSERT INTO straggler.bronze_events (pipeline, source_id, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status)
       VALUES ($1, straggler.bronze_source_id($1, 'old'), $2, $3, '{}', '2026-10-01T12:01:00Z', '2026-10-01T12:01:00Z', '""', 9e131071, 'accepted')`,
      [failing.name, i + 1, id],
    );
  }
  await landLines(pool, failing, [["f1", "2026-10-01T12:15:00Z", 1]]);
  await runBatch(pool, failing, "once");
  api = await startApi({
    pool,
    pipelines: [quiet, steady, held, backlog, stalled, failing],
    log: createLogger("silent"),
    token: "t0ken",
  });
});
afterAll(async () => api?.close());

describe("the state badge says what holds the pipeline", () => {
  it("/ui: a quiet input holding the watermark, a hold, windows awaiting correction, a stalled stream and a failed window are each named", async () => {
    const { pool } = await getDb();
    const lastBatch = (
      await pool.query("SELECT timestamp FROM straggler.batch_progress WHERE pipeline = $1", [stalled.name])
    ).rows[0].timestamp as string;
    const stalledAt = new Date(Date.parse(lastBatch)).toISOString();
    const expected = [
      ["ui-quiet", "busy", "held by input b (quiet since 2026-10-02T00:00:00.000Z)"],
      ["ui-steady", "good", "up to date"],
      ["ui-held", "busy", `held since ${heldAt} (checking a <late> source) · up to date`],
      ["ui-backlog", "busy", "up to date · 1 awaiting correction"],
      ["ui-stalled", "bad", `stalled: 2 rows waiting, last batch at ${stalledAt}`],
      ["ui-failed", "bad", "up to date · 1 failed window"],
    ];
    expect(await listBadges(api)).toEqual(expected);
    for (const [name, tone, label] of expected) expect((await pageBadge(api, name!)).badge).toEqual([tone, label]);
  });

  it("the pipeline page lists each input with its delay and watermark, and names the one holding it", async () => {
    const { page } = await pageBadge(api, "ui-quiet");
    expect(page).toContain("<h2>Inputs <small>the watermark is the min of theirs</small></h2>");
    expect(inputRows(page)).toEqual([
      "default | 10m | - | - | - | no row yet: not in the choice",
      "a | 10m | 2026-10-02T04:50:00.000Z | 2026-10-02T05:00:00.000Z | 2026-10-02T05:00:00.000Z | ",
      "b | 10m | 2026-10-01T23:50:00.000Z | 2026-10-02T00:00:00.000Z | 2026-10-02T00:00:00.000Z | holds the watermark (quiet since 2026-10-02T00:00:00.000Z)",
    ]);
    expect(/<div class="value" data-field="watermark">([^<]*)<\/div>/.exec(page)?.[1]).toBe("2026-10-01T23:50:00.000Z");
    const steadyPage = (await pageBadge(api, "ui-steady")).page;
    expect(inputRows(steadyPage)).toEqual([
      "default | 10m | - | - | - | no row yet: not in the choice",
      "a | 5m | 2026-10-02T04:55:00.000Z | 2026-10-02T05:00:00.000Z | 2026-10-02T05:00:00.000Z | ",
      "b | 25m | 2026-10-02T04:15:00.000Z | 2026-10-02T04:40:00.000Z | 2026-10-02T05:00:00.000Z | holds the watermark",
    ]);
    // A pipeline with its default input alone has no inputs table.
    expect((await pageBadge(api, "ui-held")).page).not.toContain('id="inputs"');
  });
});
