/**
 * Amended events (issue 13 item 5, README "Amended events"): `admission.dedupe`
 * first | latest. A re-send with the same event id and the same content (event
 * time, group key, value) is DUPLICATE in both modes; with other content it is
 * AMENDED_DUPLICATE under `first` (results unchanged) and supersedes the
 * earlier version under `latest` (both versions' windows corrected: by the
 * stream while open, by the correction job once final).
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { pipelineSchema } from "../../src/config/pipelineSchema.js";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import type { Pool } from "../../src/db/pool.js";
import { readLatenessFigures } from "../../src/db/sql/observe/latenessDistribution.js";
import { landStream } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { PolicyRefusedError } from "../../src/guards/index.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

/** Orders over HTTP: id, event time t, amount v; sum per 10-minute tumbling window, 10-minute delay. */
const orders = (name: string, dedupe: "first" | "latest") =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { dedupe, maxFutureSkew: null },
  });

const ev = (id: string, hhmm: string, v: string) => `{"id":"${id}","t":"2026-10-01T${hhmm}:00Z","v":${v}}`;
const land = (pool: Pool, p: PipelineConfig, ...lines: string[]) =>
  landStream(pool, p, Readable.from([lines.join("\n") + "\n"]), "http");

/** Lands `lines` as one source, then runs one micro-batch. */
async function step(pool: Pool, p: PipelineConfig, ...lines: string[]) {
  const landed = await land(pool, p, ...lines);
  await runBatch(pool, p, "once");
  return landed;
}

const amendments = async (pool: Pool, name: string) =>
  (
    await pool.query(
      `SELECT event_id, reason, superseded_seq::int, superseding_seq::int, old_event_time, old_value, new_event_time, new_value
         FROM straggler.amendments WHERE pipeline = $1 ORDER BY superseded_seq`,
      [name],
    )
  ).rows;

const quarantine = async (pool: Pool, name: string) =>
  (await pool.query("SELECT event_id, reason FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq", [name])).rows;

/** The bronze seqs of a pipeline's rows, in landing order. */
const seqs = async (pool: Pool, name: string): Promise<number[]> =>
  (await pool.query("SELECT seq::int FROM straggler.bronze_events WHERE pipeline = $1 ORDER BY seq", [name])).rows.map(
    (r) => r.seq,
  );

describe("admission.dedupe", () => {
  it("reads first (the default; true is its older spelling), latest and false, and refuses anything else by name", () => {
    const parse = (dedupe: unknown) =>
      pipelineSchema.safeParse({
        name: "x",
        fields: { eventTime: "t" },
        window: { type: "tumbling", size: "1 minute" },
        watermark: { delay: "0 seconds" },
        admission: dedupe === undefined ? {} : { dedupe },
      });
    expect([undefined, "first", true, "latest", false].map((d) => parse(d).data?.admission.dedupe)).toEqual([
      true,
      true,
      true,
      "latest",
      false,
    ]);
    const bad = parse("newest");
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      [
        "admission.dedupe",
        'expected "first" (the first version of an event id stays), "latest" (a re-send with other content supersedes it) or false (no dedupe)',
      ],
    ]);
  });

  it("the issue's example under latest: A-1 = 10.00 and A-2 = 5.00, then A-1 again with 12.00: the open window goes 15.00 → 17.00, the amendment is listed", async () => {
    const { pool } = await getDb();
    const p = orders("amend-latest", "latest");
    await step(pool, p, ev("A-1", "12:01", "10.00"), ev("A-2", "12:02", "5.00"));
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=15.00 open"]);
    const landed = await step(pool, p, ev("A-1", "12:01", "12.00"));
    expect([landed.accepted, landed.quarantined, landed.byReason]).toEqual([1, 0, {}]);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=17.00 open"]);
    const [a1, , a1again] = await seqs(pool, p.name);
    expect(await amendments(pool, p.name)).toEqual([
      {
        event_id: "A-1",
        reason: "SUPERSEDED",
        superseded_seq: a1,
        superseding_seq: a1again,
        old_event_time: "2026-10-01T12:01:00.000Z",
        old_value: "10.00",
        new_event_time: "2026-10-01T12:01:00.000Z",
        new_value: "12.00",
      },
    ]);
    // Bronze keeps both versions as they landed: accepted, nothing quarantined.
    expect(await quarantine(pool, p.name)).toEqual([]);
    // The window closes at 17.00 and reconcile (bronze less superseded versions) agrees.
    await step(pool, p, ev("close", "12:30", "0"));
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=17.00 final", "[12:30,12:40)=0 open"]);
    const report = await reconcile(pool, p);
    expect([report.ok, report.mismatches, report.windowsChecked]).toEqual([true, [], 1]);
    expect(report.ledger).toEqual({ landed: 4, accepted: 4, quarantined: 0, landedBySource: 4, balanced: true });
    // Lateness measures the events as they stand: 3 rows, not 4.
    expect((await readLatenessFigures(pool, p.name, { from: null, to: null })).count).toBe(3);
  });

  it("the issue's example under first: the window stays 15.00 and the re-send is one AMENDED_DUPLICATE", async () => {
    const { pool } = await getDb();
    const p = orders("amend-first", "first");
    await step(pool, p, ev("A-1", "12:01", "10.00"), ev("A-2", "12:02", "5.00"));
    const landed = await step(pool, p, ev("A-1", "12:01", "12.00"));
    expect([landed.accepted, landed.quarantined, landed.byReason]).toEqual([0, 1, { AMENDED_DUPLICATE: 1 }]);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=15.00 open"]);
    expect(await quarantine(pool, p.name)).toEqual([{ event_id: "A-1", reason: "AMENDED_DUPLICATE" }]);
    expect(await amendments(pool, p.name)).toEqual([]);
  });

  it.each(["first", "latest"] as const)(
    "under %s an identical re-send is DUPLICATE: same event time, key and value, even written otherwise (10.0, fields reordered, another field)",
    async (mode) => {
      const { pool } = await getDb();
      const p = orders(`identical-${mode}`, mode);
      await step(pool, p, ev("A-1", "12:01", "10.00"), ev("A-2", "12:02", "5.00"));
      const landed = await step(
        pool,
        p,
        ev("A-1", "12:01", "10.00"),
        '{"v":10.0,"note":"resent","t":"2026-10-01T12:01:00.000000Z","id":"A-1"}',
      );
      expect([landed.accepted, landed.byReason]).toEqual([0, { DUPLICATE: 2 }]);
      expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=15.00 open"]);
      expect(await amendments(pool, p.name)).toEqual([]);
    },
  );

  it("within one landing: copies of the version before are DUPLICATE; under latest the last other version wins, under first the first stays", async () => {
    const { pool } = await getDb();
    const latest = orders("one-landing-latest", "latest");
    const first = orders("one-landing-first", "first");
    const lines = [
      ev("A-1", "12:01", "10.00"),
      ev("A-1", "12:01", "10.00"),
      ev("A-1", "12:01", "12.00"),
      ev("A-1", "12:01", "12.00"),
      ev("A-2", "12:02", "5.00"),
    ];
    const l = await step(pool, latest, ...lines);
    expect([l.accepted, l.byReason]).toEqual([3, { DUPLICATE: 2 }]);
    expect(await windowSummary(pool, latest.name)).toEqual(["[12:00,12:10)=17.00 open"]);
    const s = await seqs(pool, latest.name);
    expect((await amendments(pool, latest.name)).map((a) => [a.superseded_seq, a.superseding_seq])).toEqual([
      [s[0], s[2]],
    ]);
    const f = await step(pool, first, ...lines);
    expect([f.accepted, f.byReason]).toEqual([2, { DUPLICATE: 1, AMENDED_DUPLICATE: 2 }]);
    expect(await windowSummary(pool, first.name)).toEqual(["[12:00,12:10)=15.00 open"]);
  });

  it("latest, windows open: an amendment that moves an event to another window takes it out of the old one (left at 0) and adds it to the new one", async () => {
    const { pool } = await getDb();
    const p = orders("move-open", "latest");
    await step(pool, p, ev("A-1", "12:01", "10.00"), ev("A-2", "12:12", "5.00"));
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=10.00 open", "[12:10,12:20)=5.00 open"]);
    await step(pool, p, ev("A-1", "12:15", "10.00"));
    expect(await windowSummary(pool, p.name, "count")).toEqual(["[12:00,12:10)=0 open", "[12:10,12:20)=2 open"]);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=null open", "[12:10,12:20)=15.00 open"]);
    await step(pool, p, ev("close", "12:40", "0"));
    const report = await reconcile(pool, p);
    expect([report.ok, report.mismatches, report.windowsChecked]).toEqual([true, [], 1]);
  });

  it("latest, windows final: an amendment after the window is final marks both windows awaiting correction; the correction fixes both and reconcile finds 0 mismatches", async () => {
    const { pool } = await getDb();
    const p = orders("move-final", "latest");
    await step(pool, p, ev("A-1", "12:01", "10.00"), ev("A-2", "12:02", "5.00"), ev("B-1", "12:11", "1.00"));
    await step(pool, p, ev("close", "12:30", "0")); // watermark 12:20: [12:00,12:10) and [12:10,12:20) final
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:00,12:10)=15.00 final",
      "[12:10,12:20)=1.00 final",
      "[12:30,12:40)=0 open",
    ]);
    // A-1 moves to 12:15 with 10.00; A-2 stays in its window with 7.00.
    const landed = await step(pool, p, ev("A-1", "12:15", "10.00"), ev("A-2", "12:02", "7.00"));
    expect([landed.accepted, landed.byReason]).toEqual([2, {}]);
    // The stream never writes a final window: both wait for the correction.
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:00,12:10)=15.00 final",
      "[12:10,12:20)=1.00 final",
      "[12:30,12:40)=0 open",
    ]);
    const awaiting = await pool.query(
      "SELECT window_start, window_end FROM straggler.window_results WHERE pipeline = $1 AND awaiting_correction ORDER BY window_start",
      [p.name],
    );
    expect(awaiting.rows.map((r) => [r.window_start.slice(11, 16), r.window_end.slice(11, 16)])).toEqual([
      ["12:00", "12:10"],
      ["12:10", "12:20"],
    ]);
    const before = await reconcile(pool, p);
    expect(before.mismatches.length).toBe(2);

    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect(run.status).toBe("succeeded");
    expect(run.changes.map((c) => [c.windowStart.slice(11, 16), c.before, c.after, c.revision])).toEqual([
      [
        "12:00",
        { count: 2, sum: "15.00", min: "5.00", max: "10.00" },
        { count: 1, sum: "7.00", min: "7.00", max: "7.00" },
        2,
      ],
      [
        "12:10",
        { count: 1, sum: "1.00", min: "1.00", max: "1.00" },
        { count: 2, sum: "11.00", min: "1.00", max: "10.00" },
        2,
      ],
    ]);
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:00,12:10)=7.00 corrected",
      "[12:10,12:20)=11.00 corrected",
      "[12:30,12:40)=0 open",
    ]);
    const s = await seqs(pool, p.name);
    expect(
      (await amendments(pool, p.name)).map((a) => [
        a.event_id,
        a.superseded_seq,
        a.superseding_seq,
        a.old_value,
        a.new_value,
      ]),
    ).toEqual([
      ["A-1", s[0], s[4], "10.00", "10.00"],
      ["A-2", s[1], s[5], "5.00", "7.00"],
    ]);
    const report = await reconcile(pool, p);
    expect([report.ok, report.mismatches, report.windowsChecked]).toEqual([true, [], 2]);
    const again = await runCorrection(pool, p, { trigger: "cli" });
    expect([again.windowsExamined, again.windowsChanged]).toEqual([0, 0]);
  });

  it("latest, sliding windows: the old version's open window is recomputed by the stream, its final one corrected by the job", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "amend-sliding",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", value: "v" },
      window: { type: "sliding", size: "10 minutes", slide: "5 minutes" },
      watermark: { delay: "5 minutes" },
      admission: { dedupe: "latest", maxFutureSkew: null },
    });
    await step(pool, p, ev("A-1", "12:07", "10"));
    await step(pool, p, ev("close", "12:16", "0")); // watermark 12:11: [12:00,12:10) final, [12:05,12:15) open
    await step(pool, p, ev("A-1", "12:07", "3"));
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:00,12:10)=10 final",
      "[12:05,12:15)=3 open",
      "[12:10,12:20)=0 open",
      "[12:15,12:25)=0 open",
    ]);
    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect(run.changes.map((c) => [c.windowStart.slice(11, 16), c.before?.sum, c.after.sum, c.lateEventCount])).toEqual(
      [["12:00", "10", "3", 1]],
    );
    await step(pool, p, ev("later", "12:40", "0"));
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:00,12:10)=3 corrected",
      "[12:05,12:15)=3 final",
      "[12:10,12:20)=0 final",
      "[12:15,12:25)=0 final",
      "[12:35,12:45)=0 open",
      "[12:40,12:50)=0 open",
    ]);
    const report = await reconcile(pool, p);
    expect([report.ok, report.windowsChecked]).toEqual([true, 4]);
  });

  it("dedupe is admission policy: changing first → latest refuses the stream, naming the setting", async () => {
    const { pool } = await getDb();
    const first = orders("dedupe-policy", "first");
    await step(pool, first, ev("A-1", "12:01", "10.00"));
    const latest = orders("dedupe-policy", "latest");
    await land(pool, latest, ev("A-2", "12:02", "5.00"));
    const e = await runBatch(pool, latest, "once").catch((x: unknown) => x);
    expect(e).toBeInstanceOf(PolicyRefusedError);
    expect((e as PolicyRefusedError).changes.map((c) => c.text)).toEqual(["admission.dedupe: first → latest"]);
  });
});
