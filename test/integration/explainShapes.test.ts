/**
 * Explain a window (docs/operations.md "Explain a window") for sliding and calendar windows, an
 * amended event (`admission.dedupe: latest`) and quarantined rows that would have fallen in the
 * window: exact revisions.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { runRecordedReconcile } from "../../src/correction/reconcileRun.js";
import type { Pool } from "../../src/db/pool.js";
import { landStream } from "../../src/ingest/landFile.js";
import { cutover } from "../../src/lifecycle/cutover.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
import { explainWindow, type WindowExplanation } from "../../src/observe/explain.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

const hm = (iso: string | null) => (iso === null ? "none" : iso.slice(11, 16));
/** A revision as `cause: before → after status` (values: sums). */
function story(x: WindowExplanation): string[] {
  const v = (a: { sum: string | null } | null) => (a === null ? "-" : a.sum);
  return x.revisions.map((r) => {
    const c = r.cause;
    const cause =
      c.kind === "micro-batch"
        ? `batch ${c.batchId} +${c.eventsAdded}${c.amended.length ? ` amended ${c.amended}` : ""} wm ${hm(c.watermarkAfter)}`
        : c.kind === "correction"
          ? `run ${c.trigger} late [${c.lateEvents}]${c.amended.length ? ` amended ${c.amended}` : ""}`
          : c.kind;
    return `${cause}: ${v(r.before)} -> ${v(r.after)} ${r.status} r${r.revision}`;
  });
}

let sources = 0;
async function landAndRun(pool: Pool, p: PipelineConfig, lines: string[]) {
  await landStream(pool, p, Readable.from([lines.join("\n") + "\n"]), `source-${++sources}`);
  return runBatch(pool, p, "once");
}
const ev = (id: string, t: string, v: number | string) => JSON.stringify({ id, t, v });

describe("explain: window shapes", () => {
  it("sliding (10 minutes every 5): one late event counts in the two windows it was late for", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "sliding",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "sliding", size: "10 minutes", slide: "5 minutes" },
      watermark: { delay: "10 minutes" },
      admission: { maxFutureSkew: null },
    });
    const t = (hhmm: string) => `2026-10-01T${hhmm}:00Z`;
    await landAndRun(pool, p, [ev("a", t("12:01"), 1), ev("b", t("12:07"), 2)]);
    await landAndRun(pool, p, [ev("c", t("12:30"), 4), ev("a", t("12:01"), 1), ev("d", t("12:06"), "lots")]); // watermark 12:20; a DUPLICATE, d INVALID_VALUE
    await landAndRun(pool, p, [ev("e", t("12:08"), 8)]); // late for [12:00,12:10) and [12:05,12:15)
    await runCorrection(pool, p, { trigger: "cli" });
    const x = await explainWindow(pool, p, t("12:05"));
    expect([x.windowType, x.window]).toEqual([
      "sliding",
      { start: "2026-10-01T12:05:00.000Z", end: "2026-10-01T12:15:00.000Z" },
    ]);
    expect(story(x)).toEqual([
      "batch 0 +1 wm 11:57: - -> 2 open r1",
      "batch 1 +0 wm 12:20: 2 -> 2 final r1",
      "run cli late [e]: 2 -> 10 corrected r2",
    ]);
    expect(
      x.lateEvents.map((e) => [e.eventId, e.droppedInBatch, hm(e.droppedAtWatermark), e.recoveredByRun !== null]),
    ).toEqual([["e", 2, "12:20", true]]);
    expect([
      x.quarantined.total,
      x.quarantined.rows.map((q) => [q.eventId, q.reason, q.detail, q.eventTime, q.value]),
    ]).toEqual([
      1,
      [["d", "INVALID_VALUE", 'value "v": not a decimal number: "lots"', "2026-10-01T12:06:00.000Z", null]],
    ]);
    const first = await explainWindow(pool, p, t("12:00"));
    expect(story(first)).toEqual([
      "batch 0 +2 wm 11:57: - -> 3 open r1",
      "batch 1 +0 wm 12:20: 3 -> 3 final r1",
      "run cli late [e]: 3 -> 11 corrected r2",
    ]);
    expect(first.quarantined.rows.map((q) => [q.eventId, q.reason, q.eventTime, q.value])).toEqual([
      ["a", "DUPLICATE", "2026-10-01T12:01:00.000Z", "1"],
      ["d", "INVALID_VALUE", "2026-10-01T12:06:00.000Z", null],
    ]);
    await expect(explainWindow(pool, p, t("12:02"))).rejects.toThrow(
      "start: 2026-10-01T12:02:00.000Z is not the start of a window of pipeline sliding; the windows holding it start at 2026-10-01T11:55:00.000Z, 2026-10-01T12:00:00.000Z",
    );
  });

  it("calendar (New York days): the day of the spring change is 23 hours, and its late event is recovered", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "ny-days",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      timestamps: { timeZone: "America/New_York" },
      window: { type: "tumbling", size: "1 day", timeZone: "America/New_York" },
      watermark: { delay: "1 hour" },
      admission: { maxFutureSkew: null },
    });
    await landAndRun(pool, p, [ev("a", "2026-03-08 10:00", 1)]);
    await landAndRun(pool, p, [ev("b", "2026-03-09 05:00", 2)]); // watermark 04:00 EDT: the 8th is final
    await landAndRun(pool, p, [ev("c", "2026-03-08 23:30", 4)]); // late
    await runCorrection(pool, p, { trigger: "cli" });
    const x = await explainWindow(pool, p, "2026-03-08T00:00:00-05:00");
    expect([x.windowType, x.window, x.now?.sum, x.now?.status]).toEqual([
      "calendar",
      { start: "2026-03-08T05:00:00.000Z", end: "2026-03-09T04:00:00.000Z" },
      "5",
      "corrected",
    ]);
    expect(story(x)).toEqual([
      "batch 0 +1 wm 13:00: - -> 1 open r1",
      "batch 1 +0 wm 08:00: 1 -> 1 final r1",
      "run cli late [c]: 1 -> 5 corrected r2",
    ]);
    expect(x.lateEvents.map((e) => [e.eventId, e.eventTime, e.droppedInBatch, e.droppedAtWatermark])).toEqual([
      ["c", "2026-03-09T03:30:00.000Z", 2, "2026-03-09T08:00:00.000Z"],
    ]);
    await expect(explainWindow(pool, p, "2026-03-08T00:00:00Z")).rejects.toThrow(
      "the windows holding it start at 2026-03-07T05:00:00.000Z",
    );
  });

  it("an amended event (admission.dedupe: latest): the stream recomputes the open window, a correction the final one", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "amended",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
      admission: { dedupe: "latest", maxFutureSkew: null },
    });
    const t = (hhmm: string) => `2026-10-01T${hhmm}:00Z`;
    await landAndRun(pool, p, [ev("a", t("12:01"), 1), ev("b", t("12:02"), 2)]);
    await landAndRun(pool, p, [ev("a", t("12:01"), 10)]); // open: the stream replaces a
    await landAndRun(pool, p, [ev("c", t("12:25"), 4)]); // watermark 12:15: final
    await landAndRun(pool, p, [ev("b", t("12:02"), 20)]); // final: awaits the correction
    const run = (await runCorrection(pool, p, { trigger: "cli" })).runId;
    const x = await explainWindow(pool, p, t("12:00"));
    expect(story(x)).toEqual([
      "batch 0 +2 wm 11:52: - -> 3 open r1",
      "batch 1 +1 amended a wm 11:52: 3 -> 12 open r1",
      "batch 2 +0 wm 12:15: 12 -> 12 final r1",
      "run cli late [b] amended b: 12 -> 30 corrected r2",
    ]);
    // The late event is b's new version (value 20), dropped by micro-batch 3; its old version is not late.
    expect(x.lateEvents.map((e) => [e.eventId, e.value, e.droppedInBatch, e.recoveredByRun])).toEqual([
      ["b", "20", 3, run],
    ]);
    expect(x.now).toEqual({ count: 2, sum: "30", min: "10", max: "20", status: "corrected", revision: 2, held: false });
  });

  it("a rebuild and cutover: the window's history starts with the cutover to version 2, from what version 1 had", async () => {
    const { pool } = await getDb();
    const raw = {
      name: "rebuilt",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "5 minutes" },
      admission: { maxFutureSkew: null },
    };
    const broken = pipeline({ ...raw, timestamps: { format: "iso8601" } });
    const fixed = pipeline({ ...raw, timestamps: { format: "iso8601", timeZone: "America/New_York" } });
    await landAndRun(pool, broken, [
      ev("1", "2026-03-02T12:01:00", 10),
      ev("2", "2026-03-02T12:05:00", 20),
      ev("3", "2026-03-02T12:12:00", 5),
    ]);
    const r = await rebuild(pool, fixed);
    await cutover(pool, fixed, r.version);
    await landAndRun(pool, fixed, [ev("4", "2026-03-02T12:14:00", 1)]);
    const first = await explainWindow(pool, fixed, "2026-03-02T17:00:00Z");
    expect(story(first)).toEqual(["cutover: - -> 30 open r1"]);
    expect(first.revisions[0]!.cause).toEqual({ kind: "cutover", version: 2, previousVersion: 1 });
    expect(first.quarantined).toEqual({ total: 0, rows: [] }); // bronze holds the live version's classification
    expect(story(await explainWindow(pool, fixed, "2026-03-02T17:10:00Z"))).toEqual([
      "cutover: - -> 5 open r1",
      "batch 1 +1 wm 17:09: 5 -> 6 open r1",
    ]);
  });

  it("a correction a reconcile run caused: a results row changed by hand shows as the correction's before, the reconcile run named", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "drifted",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
      admission: { maxFutureSkew: null },
    });
    const t = (hhmm: string) => `2026-10-01T${hhmm}:00Z`;
    await landAndRun(pool, p, [ev("a", t("12:01"), 10), ev("b", t("12:30"), 1)]); // watermark 12:20: final
    await pool.query(
      "UPDATE straggler.window_results_table SET value_sum = 99 WHERE pipeline = $1 AND window_start = $2",
      [p.name, t("12:00")],
    );
    const checked = await runRecordedReconcile(pool, p, { trigger: "cli" });
    const run = (await runCorrection(pool, p, { trigger: "cron" })).runId;
    const x = await explainWindow(pool, p, t("12:00"));
    expect(story(x)).toEqual(["batch 0 +1 wm 12:20: - -> 10 final r1", "run cron late []: 99 -> 10 corrected r2"]);
    expect(x.revisions[1]!.cause).toEqual({
      kind: "correction",
      runId: run,
      trigger: "cron",
      cronSlot: null,
      reconcileRunId: checked.runId,
      lateEvents: [],
      amended: [],
    });
  });
});
