/**
 * Session windows against a plain batch sessionization (issue 17 item 1):
 * random events of a few keys near the gap's edges (exactly a gap apart, 1 ms
 * either side), random landings, micro-batch cuts, delays and corrections,
 * run through the real landing, stream and correction on PostgreSQL.
 *
 * - After every landing, the results and the drop count equal a step-by-step
 *   model of the stream written here from the rules (Spark's late rule, an
 *   event touching a final session is dropped, touching sessions merge).
 * - After every correction, the results are exactly the batch
 *   sessionization (`sessionize` of src/core/sessions.ts) of every accepted
 *   event so far — final where the session ends at or before the watermark —
 *   and reconcile finds no mismatch.
 *
 * CI: a fixed seed and a modest number of runs; `STRAGGLER_PROPERTY_RUNS` and
 * `STRAGGLER_PROPERTY_SEED` as for oracle.test.ts.
 */
import { Readable } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { isLateSessionEvent, sessionize, sessionsTouch } from "../../src/core/sessions.js";
import { formatInstant } from "../../src/core/instants.js";
import { advanceWatermark } from "../../src/core/watermark.js";
import type { Pool } from "../../src/db/pool.js";
import { landStream } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { aggregate } from "./reference.js";

const getDb = useTestDatabase();

const RUNS_SET = process.env.STRAGGLER_PROPERTY_RUNS !== undefined;
const RUNS = Number(process.env.STRAGGLER_PROPERTY_RUNS ?? 30);
const SEED =
  process.env.STRAGGLER_PROPERTY_SEED !== undefined
    ? Number(process.env.STRAGGLER_PROPERTY_SEED)
    : RUNS_SET
      ? Date.now() % 2 ** 31
      : 20261201;
const TIME_LIMIT_MS = 60_000 + RUNS * 2_000;

/** 2024-05-01T12:00:00Z in ms: every event lies a little after it. */
const BASE_MS = Date.UTC(2024, 4, 1, 12);

interface Ev {
  k: string;
  /** Event time, ms after BASE_MS. */
  ms: number;
  v: number;
}

interface SessionScenario {
  gapMs: number;
  delayMs: number;
  maxRowsPerBatch: number;
  landings: { events: Ev[]; correctAfter: boolean }[];
}

/** Gaps of 2–4 s; events on a 1-second grid, exactly on it or 1 ms either side, so sessions touch, overlap and miss by 1 ms. */
const scenarios: fc.Arbitrary<SessionScenario> = fc
  .record({
    gap: fc.integer({ min: 2, max: 4 }),
    delay: fc.integer({ min: 0, max: 6 }),
    maxRowsPerBatch: fc.oneof(fc.constant(100_000), fc.integer({ min: 1, max: 3 })),
    landings: fc.array(
      fc.record({
        events: fc.array(
          fc.record({
            k: fc.constantFrom("a", "b"),
            at: fc.integer({ min: 0, max: 30 }),
            nudge: fc.constantFrom(0, 0, -1, 1),
            v: fc.integer({ min: -99, max: 99 }),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        correctAfter: fc.boolean(),
      }),
      { minLength: 1, maxLength: 6 },
    ),
  })
  .map(({ gap, delay, maxRowsPerBatch, landings }) => ({
    gapMs: gap * 1000,
    delayMs: delay * 1000,
    maxRowsPerBatch,
    landings: landings.map((l) => ({
      events: l.events.map((e) => ({ k: e.k, ms: e.at * 1000 + e.nudge + 1, v: e.v })),
      correctAfter: l.correctAfter,
    })),
  }));

const usOf = (e: Ev) => BigInt(BASE_MS + e.ms) * 1000n;

/** A stored session as the tests compare it. */
type Row = string;
const row = (k: string, startUs: bigint, endUs: bigint, values: string[], status: string): Row => {
  const a = aggregate(values);
  return `${k} [${formatInstant(startUs)},${formatInstant(endUs)}) n=${a.count} sum=${a.sum} min=${a.min} max=${a.max} ${status}`;
};

/** The stream by the rules, micro-batch by micro-batch. */
class StreamModel {
  private sessions: { k: string; startUs: bigint; endUs: bigint; values: string[]; final: boolean }[] = [];
  private watermarkUs: bigint | null = null;
  private maxUs: bigint | null = null;
  dropped = 0;
  constructor(private readonly s: SessionScenario) {}

  batch(events: Ev[]): void {
    const gap = BigInt(this.s.gapMs) * 1000n;
    for (const e of events) {
      const t = usOf(e),
        own = { startUs: t, endUs: t + gap };
      const late =
        isLateSessionEvent(t, this.s.gapMs, this.watermarkUs) ||
        this.sessions.some((x) => x.k === e.k && x.final && sessionsTouch(x, own));
      if (late) this.dropped++;
      else {
        const touching = this.sessions.filter((x) => x.k === e.k && !x.final && sessionsTouch(x, own));
        this.sessions = this.sessions.filter((x) => !touching.includes(x));
        const all = [...touching, { k: e.k, ...own, values: [String(e.v)], final: false }];
        this.sessions.push({
          k: e.k,
          startUs: all.reduce((m, x) => (x.startUs < m ? x.startUs : m), t),
          endUs: all.reduce((m, x) => (x.endUs > m ? x.endUs : m), t + gap),
          values: all.flatMap((x) => x.values),
          final: false,
        });
      }
    }
    for (const e of events) if (this.maxUs === null || usOf(e) > this.maxUs) this.maxUs = usOf(e);
    this.watermarkUs = advanceWatermark(this.watermarkUs, this.maxUs, this.s.delayMs);
    for (const x of this.sessions) if (this.watermarkUs !== null && x.endUs <= this.watermarkUs) x.final = true;
  }

  rows(): Row[] {
    return this.sessions.map((x) => row(x.k, x.startUs, x.endUs, x.values, x.final ? "final" : "open")).sort();
  }
}

/** The batch sessionization of `events`, final where a session ends at or before `watermarkUs`. */
function batchSessions(
  events: Ev[],
  gapMs: number,
  watermarkUs: bigint | null,
  correctedFinal: (r: { k: string; startUs: bigint; endUs: bigint }) => string,
): Row[] {
  const out: Row[] = [];
  for (const k of ["a", "b"]) {
    for (const s of sessionize(
      events.filter((e) => e.k === k).map((e) => ({ us: usOf(e), v: String(e.v) })),
      gapMs,
    )) {
      const final = watermarkUs !== null && s.endUs <= watermarkUs;
      out.push(
        row(
          k,
          s.startUs,
          s.endUs,
          s.events.map((e) => e.v),
          final ? correctedFinal({ k, ...s }) : "open",
        ),
      );
    }
  }
  return out.sort();
}

let pipelines = 0;
let sources = 0;

async function stored(pool: Pool, p: PipelineConfig, statusOf: (status: string) => string): Promise<Row[]> {
  const { rows } = await pool.query(
    "SELECT group_key, window_start, window_end, event_count, value_sum, value_min, value_max, status FROM straggler.window_results WHERE pipeline = $1",
    [p.name],
  );
  return rows
    .map(
      (r) =>
        `${r.group_key} [${r.window_start},${r.window_end}) n=${r.event_count} sum=${r.value_sum} min=${r.value_min} max=${r.value_max} ${statusOf(r.status)}`,
    )
    .sort();
}

async function agree(pool: Pool, s: SessionScenario): Promise<void> {
  const p = pipeline({
    name: `sessions-prop-${++pipelines}`,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
    window: { type: "session", gap: `${s.gapMs} milliseconds` },
    watermark: { delay: `${s.delayMs} milliseconds` },
    trigger: { maxRowsPerBatch: s.maxRowsPerBatch },
    admission: { maxFutureSkew: null },
  });
  const model = new StreamModel(s);
  const accepted: Ev[] = [];
  let n = 0,
    dropped = 0,
    corrected = false;
  for (const [i, landing] of s.landings.entries()) {
    const text =
      landing.events
        .map((e) => JSON.stringify({ id: `e${++n}`, t: formatInstant(usOf(e)), k: e.k, v: e.v }))
        .join("\n") + "\n";
    await landStream(pool, p, Readable.from([text]), `prop-${++sources}`);
    for (let at = 0; at < landing.events.length; at += s.maxRowsPerBatch)
      model.batch(landing.events.slice(at, at + s.maxRowsPerBatch));
    for (let b = await runBatch(pool, p, "once"); b !== null; b = await runBatch(pool, p, "once"))
      dropped += b.numRowsDroppedByWatermark;
    accepted.push(...landing.events);
    if (!corrected) {
      // Until the first correction the stream alone decides the rows.
      expect(await stored(pool, p, (st) => st), `landing ${i}: the stream's rows`).toEqual(model.rows());
      expect(dropped, `landing ${i}: dropped events`).toBe(model.dropped);
    }
    if (landing.correctAfter) {
      const run = await runCorrection(pool, p, { trigger: "cli" });
      expect(run.status).toBe("succeeded");
      corrected = true;
      const { rows } = await pool.query("SELECT watermark FROM straggler.checkpoints WHERE pipeline = $1", [p.name]);
      const wm = rows[0].watermark === null ? null : BigInt(Date.parse(rows[0].watermark)) * 1000n;
      // Final rows are `final` or `corrected` (a session the correction rewrote): compared as final.
      expect(
        await stored(pool, p, (st) => (st === "corrected" ? "final" : st)),
        `landing ${i}: after the correction`,
      ).toEqual(batchSessions(accepted, s.gapMs, wm, () => "final"));
      const check = await reconcile(pool, p);
      expect([check.ok, check.mismatches]).toEqual([true, []]);
    }
  }
}

describe("property: session windows against a batch sessionization", () => {
  it(
    `stream, correction and reconcile agree with it (seed ${SEED}, ${RUNS} runs)`,
    { timeout: TIME_LIMIT_MS + 30_000 },
    async () => {
      const { pool } = await getDb();
      console.log(`[property] sessions: seed ${SEED}, ${RUNS} runs`);
      await fc.assert(
        fc.asyncProperty(scenarios, (s) => agree(pool, s)),
        { seed: SEED, numRuns: RUNS, plugins: [fc.interruptAfterTimeLimit(TIME_LIMIT_MS)] },
      );
    },
  );
});
