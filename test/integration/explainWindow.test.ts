/**
 * Explain a window (docs/operations.md "Explain a window"): the history of the seed
 * late-within-delay's [12:00,12:10) (tumbling), of a session that merged two sessions and was
 * extended by a correction, of a sliding and a calendar window, a hold and its release, an
 * amended event, quarantined rows that would have fallen in the window, and the 400s.
 */
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { holdPipeline, releasePipeline } from "../../src/lifecycle/hold.js";
import { explainWindow, type WindowExplanation } from "../../src/observe/explain.js";
import { explainSummary, formatExplanation } from "../../src/observe/explainText.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { createLogger } from "../../src/log.js";
import { startApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { lateWithinDelay, sessionOrders } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

/** A revision as `cause: before → after status` (values: sums), for exact comparisons. */
function story(x: WindowExplanation): string[] {
  const v = (a: { sum: string | null; count: number } | null) => (a === null ? "-" : (a.sum ?? `#${a.count}`));
  return x.revisions.map((r) => {
    const c = r.cause;
    const cause =
      c.kind === "micro-batch"
        ? `batch ${c.batchId} +${c.eventsAdded}${c.amended.length ? ` amended ${c.amended}` : ""} wm ${c.watermarkAfter?.slice(11, 16)}`
        : c.kind === "correction"
          ? `run ${c.runId} ${c.trigger} late [${c.lateEvents}]${c.amended.length ? ` amended ${c.amended}` : ""}`
          : c.kind === "cutover"
            ? `cutover ${c.version}`
            : c.kind === "hold"
              ? `hold ${c.holdId}`
              : `release ${c.holdId}`;
    const win = r.window ? ` [${r.window.start.slice(11, 16)},${r.window.end.slice(11, 16)})` : "";
    const replaced = r.replaced
      ? ` replacing ${r.replaced.map((s) => `[${s.start.slice(11, 16)},${s.end.slice(11, 16)})=${s.sum}`).join(" ")}`
      : "";
    return `${cause}${win}: ${v(r.before)} -> ${v(r.after)} ${r.status} r${r.revision}${r.published ? "" : " held"}${replaced}`;
  });
}

let sources = 0;
/** Lands JSON lines as one source, then runs one micro-batch. */
async function landAndRun(pool: Pool, p: PipelineConfig, rows: object[]) {
  await landStream(
    pool,
    p,
    Readable.from([rows.map((r) => JSON.stringify(r)).join("\n") + "\n"]),
    `source-${++sources}`,
  );
  return runBatch(pool, p, "once");
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(\d{3})?Z$/;

describe("explain a window", () => {
  it("tumbling (seed late-within-delay): micro-batch 0 → 15 open, micro-batch 1 → 19 final (watermark 12:15), correction run 1 → 119 corrected revision 2, recovering the 12:03 event dropped by micro-batch 2", async () => {
    const { pool } = await getDb();
    const p = lateWithinDelay();
    for (const file of ["1.json", "2.json", "3.json"]) {
      await landFile(pool, p, path.join(p.source.landingDir!, file), file);
      await runBatch(pool, p, "once");
    }
    await runCorrection(pool, p, { trigger: "cli" });
    const x = await explainWindow(pool, p, "2026-10-01T12:00:00Z");
    expect(x.revisions.map((r) => r.at).filter((t) => !ISO.test(t))).toEqual([]);
    expect({
      ...x,
      revisions: x.revisions.map((r) => ({ ...r, at: "-" })),
      lateEvents: x.lateEvents.map((e) => ({ ...e, ingestionTime: "-", landedAt: "-", latenessMs: 0 })),
    }).toEqual({
      pipeline: "late-within-delay",
      key: "",
      windowType: "tumbling",
      window: { start: "2026-10-01T12:00:00.000Z", end: "2026-10-01T12:10:00.000Z" },
      now: { count: 4, sum: "119", min: "4", max: "100", status: "corrected", revision: 2, held: false },
      revisions: [
        {
          n: 1,
          at: "-",
          before: null,
          after: { count: 2, sum: "15", min: "5", max: "10" },
          status: "open",
          revision: 1,
          published: true,
          cause: {
            kind: "micro-batch",
            batchId: 0,
            watermark: null,
            watermarkAfter: "2026-10-01T12:02:00.000Z",
            eventsAdded: 2,
            amended: [],
          },
        },
        {
          n: 2,
          at: "-",
          before: { count: 2, sum: "15", min: "5", max: "10" },
          after: { count: 3, sum: "19", min: "4", max: "10" },
          status: "final",
          revision: 1,
          published: true,
          cause: {
            kind: "micro-batch",
            batchId: 1,
            watermark: "2026-10-01T12:02:00.000Z",
            watermarkAfter: "2026-10-01T12:15:00.000Z",
            eventsAdded: 1,
            amended: [],
          },
        },
        {
          n: 3,
          at: "-",
          before: { count: 3, sum: "19", min: "4", max: "10" },
          after: { count: 4, sum: "119", min: "4", max: "100" },
          status: "corrected",
          revision: 2,
          published: true,
          cause: {
            kind: "correction",
            runId: 1,
            trigger: "cli",
            cronSlot: null,
            reconcileRunId: null,
            lateEvents: ["3.json:1"],
            amended: [],
          },
        },
      ],
      lateEvents: [
        {
          seq: 6,
          eventId: "3.json:1",
          eventTime: "2026-10-01T12:03:00.000Z",
          ingestionTime: "-",
          landedAt: "-",
          value: "100",
          latenessMs: 0,
          droppedInBatch: 2,
          droppedAtWatermark: "2026-10-01T12:15:00.000Z",
          recoveredByRun: 1,
        },
      ],
      sessionsMerged: [],
      quarantined: { total: 0, rows: [] },
    });
    // Lateness is ingestion time − event time; the seed carries no ingestion time, so it is the landing's.
    const late = x.lateEvents[0]!;
    expect(late.latenessMs).toBe(Date.parse(late.ingestionTime) - Date.parse(late.eventTime));
    expect(explainSummary(x)).toBe(
      'late-within-delay tumbling window [2026-10-01T12:00:00.000Z, 2026-10-01T12:10:00.000Z) key "": 119 (count 4), corrected, revision 2; 3 revisions, 1 late event recovered, 0 quarantined rows',
    );
    const lines = formatExplanation(x)
      .split("\n")
      .map((l) => l.replace(/\d{4}-12-\d{2}T[\d:.]+Z/g, "T"));
    expect(lines.slice(1)).toEqual([
      "  1. T  micro-batch 0 (watermark none → 2026-10-01T12:02:00.000Z, 2 events added): — → 15 (count 2)  open",
      "  2. T  micro-batch 1 (watermark 2026-10-01T12:02:00.000Z → 2026-10-01T12:15:00.000Z, 1 event added): 15 (count 2) → 19 (count 3)  final",
      "  3. T  correction run 1 (cli; 1 late event): 19 (count 3) → 119 (count 4)  corrected, revision 2",
      "late events:",
      expect.stringMatching(
        /^ {2}3\.json:1 \(seq 6\): event time 2026-10-01T12:03:00\.000Z, value 100, ingestion time T, landed T, \d+ days? .* late; dropped by micro-batch 2 \(watermark 2026-10-01T12:15:00\.000Z\); recovered by correction run 1$/,
      ),
      "quarantined rows that would have fallen in it: none",
    ]);
    // The other windows: [12:10,12:20) had no late event; [12:05, …) is no window's start.
    expect(story(await explainWindow(pool, p, "2026-10-01T12:10:00Z"))).toEqual([
      "batch 0 +1 wm 12:02: - -> 7 open r1",
      "batch 2 +0 wm 12:31: 7 -> 7 final r1",
    ]);
    await expect(explainWindow(pool, p, "2026-10-01T12:05:00Z")).rejects.toThrow(
      "start: 2026-10-01T12:05:00.000Z is not the start of a window of pipeline late-within-delay; the windows holding it start at 2026-10-01T12:00:00.000Z",
    );
    await expect(explainWindow(pool, p, "2026-10-01T12:00:00Z", "x")).rejects.toThrow(
      "key: pipeline late-within-delay has no group key fields; leave the key out",
    );
    await expect(explainWindow(pool, p, "noon")).rejects.toThrow(/^start: expected an ISO 8601 instant with a zone/);
  });

  it("a hold keeps the published value: the revisions under it are not published until its release", async () => {
    const { pool } = await getDb();
    const p = lateWithinDelay("held");
    await landFile(pool, p, path.join(p.source.landingDir!, "1.json"), "1.json");
    await runBatch(pool, p, "once");
    await holdPipeline(pool, p.name, "checking the 12:00 window");
    await landFile(pool, p, path.join(p.source.landingDir!, "2.json"), "2.json");
    await runBatch(pool, p, "once");
    await releasePipeline(pool, p.name);
    const x = await explainWindow(pool, p, "2026-10-01T12:00:00Z");
    expect(story(x)).toEqual([
      "batch 0 +2 wm 12:02: - -> 15 open r1",
      "hold 1: 15 -> 15 open r1",
      "batch 1 +1 wm 12:15: 15 -> 19 final r1 held",
      "release 1: 15 -> 19 final r1",
    ]);
    expect(x.revisions[1]!.cause).toEqual({ kind: "hold", holdId: 1, reason: "checking the 12:00 window", rule: null });
  });

  it("session: two sessions merged by a bridging event, finalized, then extended by a correction that recovered a late event", async () => {
    const { pool } = await getDb();
    const p = sessionOrders("sessions", "1 hour");
    const ev = (id: string, hhmm: string, v: number) => ({ id, t: `2024-05-01T${hhmm}:00Z`, k: "a", v });
    await landAndRun(pool, p, [ev("e1", "10:00", 1), ev("e2", "11:00", 2)]);
    await landAndRun(pool, p, [ev("e3", "10:30", 4)]); // bridges [10:00,10:30) and [11:00,11:30)
    await landAndRun(pool, p, [ev("e4", "13:00", 8)]); // watermark 12:00: [10:00,11:30) final
    const late = await landAndRun(pool, p, [ev("e5", "11:20", 16)]); // 11:50 <= 12:00: late
    expect(late!.numRowsDroppedByWatermark).toBe(1);
    const run = (await runCorrection(pool, p, { trigger: "api" })).runId!;
    const x = await explainWindow(pool, p, "2024-05-01T10:00:00Z", "a");
    expect([x.windowType, x.key, x.window, x.now]).toEqual([
      "session",
      "a",
      { start: "2024-05-01T10:00:00.000Z", end: "2024-05-01T11:50:00.000Z" },
      { count: 4, sum: "23", min: "1", max: "16", status: "corrected", revision: 2, held: false },
    ]);
    expect(story(x)).toEqual([
      "batch 0 +1 wm 10:00 [10:00,10:30): - -> 1 open r1",
      "batch 0 +1 wm 10:00 [11:00,11:30): - -> 2 open r1",
      "batch 1 +1 wm 10:00 [10:00,11:30): - -> 7 open r1 replacing [10:00,10:30)=1 [11:00,11:30)=2",
      "batch 2 +0 wm 12:00 [10:00,11:30): 7 -> 7 final r1",
      `run ${run} api late [e5] [10:00,11:50): - -> 23 corrected r2 replacing [10:00,11:30)=7`,
    ]);
    expect(x.sessionsMerged.map((s) => `[${s.start.slice(11, 16)},${s.end.slice(11, 16)})=${s.sum}`)).toEqual([
      "[10:00,10:30)=1",
      "[11:00,11:30)=2",
      "[10:00,11:30)=7",
    ]);
    expect(
      x.lateEvents.map((e) => [e.eventId, e.eventTime, e.droppedInBatch, e.droppedAtWatermark, e.recoveredByRun]),
    ).toEqual([["e5", "2024-05-01T11:20:00.000Z", 3, "2024-05-01T12:00:00.000Z", run]]);
    // An instant inside the session names it too; a key is required, and an instant in no session is a 400.
    expect((await explainWindow(pool, p, "2024-05-01T11:10:00Z", "a")).window).toEqual(x.window);
    await expect(explainWindow(pool, p, "2024-05-01T10:00:00Z")).rejects.toThrow(
      "key: pipeline sessions groups by k; give the key (or the null group)",
    );
    await expect(explainWindow(pool, p, "2024-05-01T12:00:00Z", "a")).rejects.toThrow(
      "start: no session of pipeline sessions for this key holds 2024-05-01T12:00:00.000Z",
    );
  });
});

describe("explain a session extended", () => {
  it("by a correction's recovered event (final), and by the stream while open", async () => {
    const { pool } = await getDb();
    const p = sessionOrders("extended", "1 hour");
    const ev = (id: string, hhmm: string, v: number) => ({ id, t: `2024-05-01T${hhmm}:00Z`, k: "a", v });
    await landAndRun(pool, p, [ev("x1", "10:00", 1), ev("x2", "13:00", 2)]); // watermark 12:00: [10:00,10:30) final at once
    await landAndRun(pool, p, [ev("x3", "10:20", 4)]); // late
    const run = (await runCorrection(pool, p, { trigger: "cli" })).runId!;
    await landAndRun(pool, p, [ev("x4", "13:10", 8)]); // extends the open session
    expect(story(await explainWindow(pool, p, "2024-05-01T10:00:00Z", "a"))).toEqual([
      "batch 0 +1 wm 12:00 [10:00,10:30): - -> 1 final r1",
      `run ${run} cli late [x3] [10:00,10:50): - -> 5 corrected r2 replacing [10:00,10:30)=1`,
    ]);
    const open = await explainWindow(pool, p, "2024-05-01T13:05:00Z", "a");
    expect([open.window, open.now?.status]).toEqual([
      { start: "2024-05-01T13:00:00.000Z", end: "2024-05-01T13:40:00.000Z" },
      "open",
    ]);
    expect(story(open)).toEqual([
      "batch 0 +1 wm 12:00 [13:00,13:30): - -> 2 open r1",
      "batch 2 +1 wm 12:10 [13:00,13:40): - -> 10 open r1 replacing [13:00,13:30)=2",
    ]);
    expect(open.lateEvents).toEqual([]);
  });
});

describe("explain a session split", () => {
  it("a stored session bronze says is two (planted by hand) is split by a correction over its range: each half names the session it was split from", async () => {
    const { pool } = await getDb();
    const p = sessionOrders("split", "1 hour");
    const ev = (id: string, hhmm: string, v: number) => ({ id, t: `2024-05-01T${hhmm}:00Z`, k: "a", v });
    await landAndRun(pool, p, [ev("s1", "10:00", 1), ev("s2", "11:00", 2), ev("s3", "13:00", 4)]); // watermark 12:00
    await pool.query(
      "DELETE FROM straggler.window_results_table WHERE pipeline = $1 AND window_start = '2024-05-01T11:00:00Z'",
      [p.name],
    );
    await pool.query(
      "UPDATE straggler.window_results_table SET window_end = '2024-05-01T11:30:00Z', event_count = 2, value_sum = 3, value_max = 2 WHERE pipeline = $1 AND window_start = '2024-05-01T10:00:00Z'",
      [p.name],
    );
    const run = (
      await runCorrection(pool, p, {
        trigger: "cli",
        range: { from: "2024-05-01T10:00:00.000Z", to: "2024-05-01T12:00:00.000Z" },
      })
    ).runId!;
    const x = await explainWindow(pool, p, "2024-05-01T11:00:00Z", "a");
    expect([x.window, x.now?.sum, x.now?.revision]).toEqual([
      { start: "2024-05-01T11:00:00.000Z", end: "2024-05-01T11:30:00.000Z" },
      "2",
      2,
    ]);
    expect(story(x)).toEqual([
      "batch 0 +1 wm 12:00 [11:00,11:30): - -> 2 final r1",
      `run ${run} cli late [] [11:00,11:30): - -> 2 corrected r2 replacing [10:00,11:30)=3`,
    ]);
    expect(x.sessionsMerged.map((m) => `[${m.start.slice(11, 16)},${m.end.slice(11, 16)})=${m.sum}`)).toEqual([
      "[10:00,11:30)=3",
    ]);
  });
});

describe("GET /pipelines/{pipeline}/windows/history", () => {
  it("answers the history as explain --json; 400 naming a bad start or key, 404 for an unknown pipeline", async () => {
    const { pool } = await getDb();
    const p = lateWithinDelay("over-http");
    const keyed = sessionOrders("keyed", "1 hour");
    for (const file of ["1.json", "2.json"]) {
      await landFile(pool, p, path.join(p.source.landingDir!, file), file);
      await runBatch(pool, p, "once");
    }
    const api = await startApi({
      pool,
      pipelines: [p, keyed],
      log: createLogger("silent"),
      token: "test-token-0123456789abcdef",
    });
    try {
      const get = async (q: string, name = p.name) => {
        const r = await fetch(`${api.base}/pipelines/${name}/windows/history?${q}`);
        return [r.status, await r.json()];
      };
      const [status, body] = await get("start=2026-10-01T14:00:00%2B02:00");
      expect([status, body]).toEqual([
        200,
        JSON.parse(JSON.stringify(await explainWindow(pool, p, "2026-10-01T12:00:00Z"))),
      ]);
      expect(story(body as WindowExplanation)).toEqual([
        "batch 0 +2 wm 12:02: - -> 15 open r1",
        "batch 1 +1 wm 12:15: 15 -> 19 final r1",
      ]);
      // The page's window rows link to it.
      const page = await (await fetch(`${api.base}/ui/pipelines/${p.name}`)).text();
      const links = [...page.matchAll(/href="(\/pipelines\/[^"]+\/windows\/history\?[^"]+)"/g)].map((m) =>
        m[1]!.replace(/&amp;/g, "&"),
      );
      expect(links).toEqual([
        "/pipelines/over-http/windows/history?start=2026-10-01T12%3A00%3A00.000Z",
        "/pipelines/over-http/windows/history?start=2026-10-01T12%3A10%3A00.000Z",
        "/pipelines/over-http/windows/history?start=2026-10-01T12%3A20%3A00.000Z",
      ]);
      const linked = await fetch(`${api.base}${links[0]}`);
      expect([linked.status, await linked.json()]).toEqual([200, body]);
      expect(await get("start=2026-10-01T12:01:00Z")).toEqual([
        400,
        {
          error: "invalid_request",
          message:
            "query.start: 2026-10-01T12:01:00.000Z is not the start of a window of pipeline over-http; the windows holding it start at 2026-10-01T12:00:00.000Z",
        },
      ]);
      expect(await get("start=yesterday")).toEqual([
        400,
        {
          error: "invalid_request",
          message: "query.start: expected an ISO 8601 instant with a zone, e.g. 2026-10-01T12:00:00Z",
        },
      ]);
      expect(await get("")).toEqual([
        400,
        { error: "invalid_request", message: expect.stringMatching(/^query\.start: /) },
      ]);
      expect(await get("start=2026-10-01T12:00:00Z&key=a")).toEqual([
        400,
        {
          error: "invalid_request",
          message: "query.key: pipeline over-http has no group key fields; leave the key out",
        },
      ]);
      expect(await get("start=2026-10-01T12:00:00Z", "keyed")).toEqual([
        400,
        {
          error: "invalid_request",
          message: "query.key: pipeline keyed groups by k; give the key (or the null group)",
        },
      ]);
      expect(await get("start=2026-10-01T12:00:00Z&key=a&nullKey=true", "keyed")).toEqual([
        400,
        { error: "invalid_request", message: "query.nullKey: give key or nullKey=true, not both" },
      ]);
      expect(await get("start=2026-10-01T12:00:00Z", "nope")).toEqual([
        404,
        { error: "not_found", message: expect.stringContaining("nope") },
      ]);
    } finally {
      await api.close();
    }
  });
});
