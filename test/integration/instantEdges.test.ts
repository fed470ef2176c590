/**
 * Arithmetic on instants at the edges of the supported range (0001-01-01T00:00:00Z to
 * 9999-12-31T23:59:59.999999Z, README "Timestamps"): events at year 1 and year 9999 are windowed,
 * or quarantined (PARSE_FAIL) with the window that would leave the range; a range starting at
 * 0001-01-01 is answered by the REST API, the CLI, the correction job and reconcile (the horizon
 * check's widening is clamped); a watermark never falls before year 1; the delay advisor's what-if
 * with delays longer than the events' distance from year 1 answers. Never a 500, never a crash.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import type { Pool } from "../../src/db/pool.js";
import { landStream } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { latenessReport } from "../../src/observe/lateness.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { versionWatermark } from "../../src/lifecycle/classifyRange.js";
import { startApi } from "../helpers/api.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const DIR = mkdtempSync(path.join(tmpdir(), "straggler-edges-"));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));
let n = 0;
const LANDED = Date.UTC(2024, 4, 1, 12, 0);
const RANGE = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z";
const outside = (event: string, start: string, end: string) =>
  `event time ${event}: its window [${start}, ${end}) reaches outside the supported instants (${RANGE})`;

function rawPipeline(window: Record<string, unknown>) {
  return {
    name: `edge-${++n}`,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "ts", value: "v" },
    timestamps: { format: "iso8601" },
    window,
    watermark: { delay: "1 hour" },
    admission: { maxFutureSkew: null },
  };
}

const jl = (...evs: [string, string][]) => evs.map(([id, ts]) => JSON.stringify({ id, ts, v: 1 })).join("\n") + "\n";

async function bronze(pool: Pool, name: string) {
  return (
    await pool.query(
      "SELECT event_id, status, reason, detail, event_time FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq",
      [name],
    )
  ).rows;
}
async function windowsOf(pool: Pool, name: string) {
  return (
    await pool.query(
      "SELECT window_start, window_end, event_count::int AS n FROM straggler.window_results WHERE pipeline = $1 ORDER BY window_start",
      [name],
    )
  ).rows;
}

const EDGE_EVENTS = jl(
  ["a", "0001-01-01T00:00:00Z"],
  ["b", "0001-01-01T00:30:00Z"],
  ["c", "9999-12-31T22:30:00Z"],
  ["d", "9999-12-31T23:59:59.999999Z"],
);

describe("events at year 1 and year 9999", () => {
  it("tumbling 1 hour: year 1 is windowed from 0001-01-01T00:00; the last hour of 9999 would end in year 10000: PARSE_FAIL with the window", async () => {
    const { pool } = await getDb();
    const p = pipeline(rawPipeline({ type: "tumbling", size: "1 hour" }));
    await landStream(pool, p, Readable.from([EDGE_EVENTS]), "t", LANDED);
    expect(await bronze(pool, p.name)).toEqual([
      { event_id: "a", status: "accepted", reason: null, detail: null, event_time: "0001-01-01T00:00:00.000Z" },
      { event_id: "b", status: "accepted", reason: null, detail: null, event_time: "0001-01-01T00:30:00.000Z" },
      { event_id: "c", status: "accepted", reason: null, detail: null, event_time: "9999-12-31T22:30:00.000Z" },
      {
        event_id: "d",
        status: "quarantined",
        reason: "PARSE_FAIL",
        event_time: "9999-12-31T23:59:59.999999Z",
        detail: outside("9999-12-31T23:59:59.999999Z", "9999-12-31T23:00:00.000Z", "+010000-01-01T00:00:00.000Z"),
      },
    ]);
    await runBatch(pool, p, "once");
    expect(await windowsOf(pool, p.name)).toEqual([
      { window_start: "0001-01-01T00:00:00.000Z", window_end: "0001-01-01T01:00:00.000Z", n: 2 },
      { window_start: "9999-12-31T22:00:00.000Z", window_end: "9999-12-31T23:00:00.000Z", n: 1 },
    ]);
  });

  it("sliding, offset, session and calendar windows: each event whose window would leave the range is PARSE_FAIL naming it", async () => {
    const { pool } = await getDb();
    const cases: Array<[Record<string, unknown>, Record<string, string | null>]> = [
      [
        { type: "sliding", size: "1 hour", slide: "30 minutes" },
        {
          a: outside("0001-01-01T00:00:00.000Z", "0000-12-31T23:30:00.000Z", "0001-01-01T00:30:00.000Z"),
          b: null,
          c: null,
          d: outside("9999-12-31T23:59:59.999999Z", "9999-12-31T23:00:00.000Z", "+010000-01-01T00:00:00.000Z"),
        },
      ],
      [
        { type: "tumbling", size: "1 hour", offset: "45 minutes" },
        {
          a: outside("0001-01-01T00:00:00.000Z", "0000-12-31T23:45:00.000Z", "0001-01-01T00:45:00.000Z"),
          b: outside("0001-01-01T00:30:00.000Z", "0000-12-31T23:45:00.000Z", "0001-01-01T00:45:00.000Z"),
          c: null,
          d: outside("9999-12-31T23:59:59.999999Z", "9999-12-31T23:45:00.000Z", "+010000-01-01T00:45:00.000Z"),
        },
      ],
      [
        { type: "session", gap: "30 minutes" },
        {
          a: null,
          b: null,
          c: null,
          d: `event time 9999-12-31T23:59:59.999999Z: its session window would end at +010000-01-01T00:29:59.999999Z (the event time plus the gap), after the last supported instant (${RANGE})`,
        },
      ],
      // Tokyo's local midnight of 0001-01-01 is 0000-12-31T14:41:01Z (local mean time +9:18:59).
      [
        { type: "tumbling", size: "1 month", timeZone: "Asia/Tokyo" },
        {
          a: outside("0001-01-01T00:00:00.000Z", "0000-12-31T14:41:01.000Z", "0001-01-31T14:41:01.000Z"),
          b: outside("0001-01-01T00:30:00.000Z", "0000-12-31T14:41:01.000Z", "0001-01-31T14:41:01.000Z"),
          c: outside("9999-12-31T22:30:00.000Z", "9999-12-31T15:00:00.000Z", "+010000-01-31T15:00:00.000Z"),
          d: outside("9999-12-31T23:59:59.999999Z", "9999-12-31T15:00:00.000Z", "+010000-01-31T15:00:00.000Z"),
        },
      ],
      // UTC calendar days: year 1's first day is inside; 9999's last ends at +010000-01-01.
      [
        { type: "tumbling", size: "1 day", timeZone: "UTC" },
        {
          a: null,
          b: null,
          c: outside("9999-12-31T22:30:00.000Z", "9999-12-31T00:00:00.000Z", "+010000-01-01T00:00:00.000Z"),
          d: outside("9999-12-31T23:59:59.999999Z", "9999-12-31T00:00:00.000Z", "+010000-01-01T00:00:00.000Z"),
        },
      ],
    ];
    for (const [window, details] of cases) {
      const p = pipeline(rawPipeline(window));
      await landStream(pool, p, Readable.from([EDGE_EVENTS]), "t", LANDED);
      const rows = await bronze(pool, p.name);
      expect(Object.fromEntries(rows.map((r) => [r.event_id, r.detail])), JSON.stringify(window)).toEqual(details);
      expect(
        rows.map((r) => r.reason),
        JSON.stringify(window),
      ).toEqual(Object.values(details).map((d) => (d === null ? null : "PARSE_FAIL")));
      // The stream, the correction job and reconcile digest what was accepted.
      await runBatch(pool, p, "once");
      expect(
        (
          await runCorrection(pool, p, {
            trigger: "cli",
            range: { from: "0001-01-01T00:00:00.000Z", to: "0001-01-02T00:00:00.000Z" },
          })
        ).status,
      ).toBe("succeeded");
      expect((await reconcile(pool, p)).ok).toBe(true);
    }
  });

  it("a watermark never falls before 0001-01-01T00:00:00Z; the stream, correction, reconcile and the advisor's what-if answer", async () => {
    const { pool } = await getDb();
    const p = pipeline(rawPipeline({ type: "tumbling", size: "1 hour" }));
    await landStream(
      pool,
      p,
      Readable.from([jl(["a", "0001-01-01T00:00:00Z"], ["b", "0001-01-01T00:30:00Z"])]),
      "t",
      LANDED,
    );
    expect((await runBatch(pool, p, "once"))!.nextWatermark).toBe("0001-01-01T00:00:00.000Z");
    await landStream(pool, p, Readable.from([jl(["c", "0001-01-01T00:10:00Z"])]), "t", LANDED);
    const second = (await runBatch(pool, p, "once"))!;
    expect([second.nextWatermark, second.numRowsDroppedByWatermark]).toEqual(["0001-01-01T00:00:00.000Z", 0]);
    expect(await windowsOf(pool, p.name)).toEqual([
      { window_start: "0001-01-01T00:00:00.000Z", window_end: "0001-01-01T01:00:00.000Z", n: 3 },
    ]);
    expect((await runCorrection(pool, p, { trigger: "cli" })).status).toBe("succeeded");
    expect((await reconcile(pool, p)).ok).toBe(true);
    const advisor = await latenessReport(pool, p, { delaysMs: [400 * 86_400_000] });
    expect(advisor.whatIf.delays.map((d) => [d.delayMs, d.droppedPairs])).toContainEqual([400 * 86_400_000, 0]);
    expect(advisor.whatIf.rows).toBe(3);
    // A rebuilt version's watermark is held to the same floor.
    expect(versionWatermark(p, "0001-01-01T00:30:00.000Z")).toBe("0001-01-01T00:00:00.000Z");
  });
});

describe("ranges at the edges: REST and CLI", () => {
  it("POST /recompute and GET /reconcile from 0001-01-01 are 200 (the horizon check's widening is clamped); an expanded year is a 400", async () => {
    const { pool } = await getDb();
    const p = pipeline(rawPipeline({ type: "tumbling", size: "1 hour" }));
    await landStream(pool, p, Readable.from([EDGE_EVENTS]), "t", LANDED);
    await runBatch(pool, p, "once");
    const TOKEN = "edges-token-0123456789abcdef";
    const api = await startApi({ pool, pipelines: [p], log: createLogger("silent"), token: TOKEN });
    try {
      const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
      const q = "from=0001-01-01T00:00:00Z&to=0001-01-02T00:00:00Z";
      const rec = await fetch(`${api.base}/pipelines/${p.name}/recompute`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ from: "0001-01-01T00:00:00Z", to: "0001-01-02T00:00:00Z" }),
      });
      const recBody = await rec.json();
      expect([rec.status, recBody.status, recBody.range]).toEqual([
        200,
        "succeeded",
        { from: "0001-01-01T00:00:00.000Z", to: "0001-01-02T00:00:00.000Z" },
      ]);
      const con = await fetch(`${api.base}/pipelines/${p.name}/reconcile?${q}`, { headers: auth });
      const conBody = await con.json();
      expect([con.status, conBody.ok, conBody.windowsChecked]).toEqual([200, true, 1]);
      const late = await fetch(
        `${api.base}/pipelines/${p.name}/reconcile?from=9999-12-31T00:00:00Z&to=9999-12-31T23:59:59.999999Z`,
        { headers: auth },
      );
      expect([late.status, (await late.json()).ok]).toEqual([200, true]);
      for (const route of ["windows", "lateness"]) {
        for (const range of [
          "from=0001-01-01T00:00:00Z&to=0001-01-02T00:00:00Z",
          "from=9999-12-31T00:00:00Z&to=9999-12-31T23:59:59.999999Z",
        ]) {
          const r = await fetch(`${api.base}/pipelines/${p.name}/${route}?${range}`, { headers: auth });
          expect([route, range, r.status]).toEqual([route, range, 200]);
        }
      }
      const expanded = await fetch(
        `${api.base}/pipelines/${p.name}/reconcile?from=9999-12-31T00:00:00Z&to=%2B010000-01-01T00:00:00Z`,
        { headers: auth },
      );
      expect(expanded.status).toBe(400);
      const yearZero = await fetch(`${api.base}/pipelines/${p.name}/recompute`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ from: "0000-12-31T00:00:00Z", to: "0001-01-02T00:00:00Z" }),
      });
      expect([yearZero.status, (await yearZero.json()).error]).toEqual([400, "invalid_request"]);
    } finally {
      await api.close();
    }
  });

  it("straggler correct --from 0001-01-01T00:00:00Z exits 0 and recomputes the range", async () => {
    const { pool, url } = await getDb();
    const raw = rawPipeline({ type: "tumbling", size: "1 hour" });
    const p = pipeline(raw);
    await landStream(pool, p, Readable.from([EDGE_EVENTS]), "t", LANDED);
    await runBatch(pool, p, "once");
    const config = path.join(DIR, "pipelines.yaml");
    writeFileSync(config, JSON.stringify({ pipelines: [raw] }));
    const r = await startCli(
      ["correct", "-p", p.name, "--from", "0001-01-01T00:00:00Z", "--to", "0001-01-02T00:00:00Z", "--json"],
      { DATABASE_URL: url, STRAGGLER_PIPELINES: config },
    ).done;
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(JSON.parse(r.stdout)).toMatchObject([
      {
        status: "succeeded",
        range: { from: "0001-01-01T00:00:00.000Z", to: "0001-01-02T00:00:00.000Z" },
        windowsExamined: 1,
      },
    ]);
  });
});
