/**
 * Stream, correction and landing running at the same time (DESIGN §9–10).
 *
 * A seeded generator makes 40 rounds of events for 5 keys; about 15 % of each
 * round is minutes late (dropped by the watermark, registered for
 * correction), and some of those are resends of earlier event ids (DUPLICATE).
 * A lander, a streamer and a corrector run concurrently on one pool; at the
 * end every window must hold exactly the accepted events the test generated:
 * nothing lost, nothing counted twice, no error escaped, reconcile clean.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { runCorrection, type CorrectionRequest, type CorrectionSummary } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { landStream } from "../../src/ingest/landFile.js";
import type { LandResult } from "../../src/ingest/landAnswer.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { checkpoint, ledger } from "../helpers/results.js";
import { prng } from "../helpers/prng.js";

const getDb = useTestDatabase();

const ROUNDS = 40;
const PER_ROUND = 150;
const KEYS = ["k0", "k1", "k2", "k3", "k4"];
const T0 = Date.parse("2026-10-01T12:00:00Z");
/** Each round starts this much later; on-time events spread over `ON_TIME_SPAN`, so windows span rounds. */
const ROUND_STEP_MS = 45_000;
const ON_TIME_SPAN_MS = 75_000;
const WINDOW_MS = 60_000;
const LATE_SHARE = 0.15;
/** Share of the late events that are resends of an earlier round's event id. */
const DUPLICATE_SHARE_OF_LATE = 0.3;

/** Integer cents as a 2-decimal literal: -5 → "-0.05". */
function decimalOf(cents: number): string {
  const a = Math.abs(cents);
  return `${cents < 0 ? "-" : ""}${Math.floor(a / 100)}.${String(a % 100).padStart(2, "0")}`;
}

/** A numeric string from PostgreSQL ("12.3", "-0.05", "7", "12.300") as exact cents; throws below a cent. */
function centsOf(s: string): bigint {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(s);
  if (!m) throw new Error(`not a plain decimal: ${s}`);
  const frac = (m[3] ?? "").padEnd(2, "0");
  if (!/^0*$/.test(frac.slice(2))) throw new Error(`finer than a cent: ${s}`);
  const v = BigInt(m[2]!) * 100n + BigInt(frac.slice(0, 2));
  return m[1] === "-" ? -v : v;
}

interface GenEvent {
  id: string;
  t: number;
  k: string;
  cents: number;
  line: string;
  duplicate: boolean;
  /** A resend whose payload changed: AMENDED_DUPLICATE (admission.dedupe: first). */
  amended?: boolean;
}

const lineOf = (id: string, t: number, k: string, cents: number) =>
  `{"id":"${id}","t":"${new Date(t).toISOString()}","k":"${k}","v":${decimalOf(cents)}}`;

/** The rounds of events, deterministic for a seed. */
function generate(seed: number): GenEvent[][] {
  const rnd = prng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const rounds: GenEvent[][] = [];
  const originals: GenEvent[] = []; // accepted events of earlier rounds: what a resend can copy
  for (let r = 0; r < ROUNDS; r++) {
    const base = T0 + r * ROUND_STEP_MS;
    const round: GenEvent[] = [];
    for (let i = 0; i < PER_ROUND; i++) {
      const late = rnd() < LATE_SHARE;
      if (late && originals.length > 0 && rnd() < DUPLICATE_SHARE_OF_LATE) {
        const o = pick(originals);
        // Half exact resends, half resends whose payload changed: either way the id was seen.
        const changed = rnd() < 0.5;
        const cents = changed ? o.cents + 1 + Math.floor(rnd() * 1000) : o.cents;
        round.push({
          ...o,
          cents,
          line: changed ? lineOf(o.id, o.t, o.k, cents) : o.line,
          duplicate: true,
          amended: changed,
        });
        continue;
      }
      let t = late
        ? base - 180_000 - Math.floor(rnd() * 240_000) // 3 to 7 minutes behind the round
        : base + Math.floor(rnd() * ON_TIME_SPAN_MS);
      if (rnd() < 0.05) t = Math.floor(t / WINDOW_MS) * WINDOW_MS; // exactly on a window boundary
      const id = `e${r}-${i}`;
      const k = pick(KEYS);
      const cents = Math.floor(rnd() * 2_000_000) - 200_000; // -2000.00 … 17999.99
      round.push({ id, t, k, cents, line: lineOf(id, t, k, cents), duplicate: false });
    }
    for (const e of round) if (!e.duplicate) originals.push(e);
    rounds.push(round);
  }
  return rounds;
}

interface Expected {
  count: number;
  cents: bigint;
}

function expectedWindows(accepted: GenEvent[]): Map<string, Expected> {
  const m = new Map<string, Expected>();
  for (const e of accepted) {
    const key = `${e.k}|${new Date(Math.floor(e.t / WINDOW_MS) * WINDOW_MS).toISOString()}`;
    const w = m.get(key) ?? { count: 0, cents: 0n };
    w.count++;
    w.cents += BigInt(e.cents);
    m.set(key, w);
  }
  return m;
}

describe("concurrency", () => {
  it("stream and correction running concurrently over many rounds with late events: no lost or doubled event, no error escapes, and reconcile finds no mismatch at the end", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "concurrent",
      source: { landingDir: "unused", format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
      window: { type: "tumbling", size: "1 minute" },
      watermark: { delay: "30 seconds" },
      trigger: { maxRowsPerBatch: 200 },
    });

    const rounds = generate(20261001);
    const all = rounds.flat();
    const accepted = all.filter((e) => !e.duplicate);
    const duplicates = all.length - accepted.length;
    expect(new Set(accepted.map((e) => e.id)).size).toBe(accepted.length); // the generator's own invariant
    expect(duplicates).toBeGreaterThan(0);

    // Interleaving only: a pause of 0–3 ms between iterations, never used to wait for a state.
    const jitter = prng(7);
    const pause = () => new Promise<void>((r) => setTimeout(r, Math.floor(jitter() * 4)));
    const MAX_ERRORS_PER_LOOP = 20;

    const errors: { who: string; error: unknown }[] = [];
    const failedRuns: CorrectionSummary[] = [];
    const landResults: LandResult[] = [];
    let landerDone = false,
      streamerDone = false;
    let batches = 0,
      concurrentRuns = 0;

    const lander = async () => {
      try {
        for (const round of rounds) {
          try {
            landResults.push(
              await landStream(pool, p, Readable.from([round.map((e) => e.line).join("\n") + "\n"]), "test"),
            );
          } catch (error) {
            errors.push({ who: "lander", error });
          }
          await pause();
        }
      } finally {
        landerDone = true;
      }
    };

    const streamer = async () => {
      let failures = 0;
      try {
        for (;;) {
          // Read before the batch: a null batch ends the loop only if nothing could land after it looked.
          const allLanded = landerDone;
          try {
            const progress = await runBatch(pool, p, "interval");
            if (progress !== null) batches++;
            else if (allLanded) break;
          } catch (error) {
            errors.push({ who: "streamer", error });
            if (++failures >= MAX_ERRORS_PER_LOOP) break;
          }
          await pause();
        }
      } finally {
        streamerDone = true;
      }
    };

    const everything = { from: new Date(T0 - 86_400_000).toISOString(), to: new Date(T0 + 86_400_000).toISOString() };
    const corrector = async () => {
      let failures = 0;
      for (let i = 0; !(landerDone && streamerDone); i++) {
        const req: CorrectionRequest = { trigger: "api" };
        if (i % 3 === 1) req.range = everything;
        if (i % 4 === 2) {
          const some = KEYS.filter(() => jitter() < 0.5);
          req.keys = some.length > 0 ? some : [KEYS[i % KEYS.length]!];
        }
        try {
          const summary = await runCorrection(pool, p, req);
          concurrentRuns++;
          if (summary.status === "failed") failedRuns.push(summary);
        } catch (error) {
          errors.push({ who: "corrector", error });
          if (++failures >= MAX_ERRORS_PER_LOOP) break;
        }
        await pause();
      }
    };

    const started = performance.now();
    await Promise.all([lander(), streamer(), corrector()]);
    const concurrentMs = Math.round(performance.now() - started);

    expect(errors.map(({ who, error }) => `${who}: ${(error as Error)?.stack ?? String(error)}`)).toEqual([]);
    expect(
      failedRuns.map((s) => `run ${s.runId} (${JSON.stringify(s.range)} ${JSON.stringify(s.keys)}): ${s.error}`),
    ).toEqual([]);
    expect(landResults.map((r) => [r.alreadyLanded, r.landed, r.quarantined])).toEqual(
      rounds.map((round) => [false, round.length, round.filter((e) => e.duplicate).length]),
    );

    // Quiesce: the stream catches up, one last correction fixes what the last batches dropped.
    while ((await runBatch(pool, p, "interval")) !== null) batches++;
    const last = await runCorrection(pool, p, { trigger: "api" });
    expect([last.status, last.error]).toEqual(["succeeded", null]);

    // The ledger: every line landed once; exactly the resends are quarantined: DUPLICATE, or AMENDED_DUPLICATE when the payload changed.
    expect(await ledger(pool, p.name)).toEqual({
      landed: all.length,
      accepted: accepted.length,
      quarantined: duplicates,
    });
    const reasons = await pool.query(
      "SELECT reason, count(*)::int AS n FROM straggler.quarantine WHERE pipeline = $1 GROUP BY reason ORDER BY reason",
      [p.name],
    );
    const amended = all.filter((e) => e.amended).length;
    expect(amended).toBeGreaterThan(0);
    expect(reasons.rows).toEqual([
      { reason: "AMENDED_DUPLICATE", n: amended },
      { reason: "DUPLICATE", n: duplicates - amended },
    ]);
    const ids = await pool.query(
      "SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS ids FROM straggler.bronze WHERE pipeline = $1 AND status = 'accepted'",
      [p.name],
    );
    expect(ids.rows[0]).toEqual({ n: accepted.length, ids: accepted.length });

    // Gold: one window per event (tumbling), so the counts and sums add up to the accepted events exactly.
    const { rows } = await pool.query(
      "SELECT group_key, window_start, window_end, event_count, value_sum, status FROM straggler.window_results WHERE pipeline = $1",
      [p.name],
    );
    const stored = new Map<string, Expected>(
      rows.map((r) => [
        `${r.group_key}|${r.window_start}`,
        { count: r.event_count as number, cents: centsOf(r.value_sum as string) },
      ]),
    );
    expect(stored.size).toBe(rows.length);
    expect(rows.reduce((n, r) => n + (r.event_count as number), 0)).toBe(accepted.length);
    expect([...stored.values()].reduce((s, w) => s + w.cents, 0n)).toBe(
      accepted.reduce((s, e) => s + BigInt(e.cents), 0n),
    );
    expect(stored).toEqual(expectedWindows(accepted));

    // Ownership: windows at or behind the watermark are final (or corrected), the rest open.
    const { watermark } = await checkpoint(pool, p.name);
    const maxEvent = Math.max(...accepted.map((e) => e.t));
    expect(watermark).toBe(new Date(maxEvent - 30_000).toISOString());
    const wm = Date.parse(watermark!);
    expect(rows.filter((r) => (r.status === "open") !== Date.parse(r.window_end as string) > wm)).toEqual([]);

    const report = await reconcile(pool, p);
    expect([report.ok, report.mismatches, report.backlogRows]).toEqual([true, [], 0]);
    expect(report.ledger).toEqual({
      landed: all.length,
      accepted: accepted.length,
      quarantined: duplicates,
      landedBySource: all.length,
      balanced: true,
    });
    const awaiting = await pool.query(
      "SELECT group_key, window_start, window_end FROM straggler.windows_awaiting_correction WHERE pipeline = $1 AND window_end <= $2",
      [p.name, watermark],
    );
    expect(awaiting.rows).toEqual([]);

    // The late path really ran: the stream dropped rows, corrections changed windows, no run failed or hung.
    const dropped = (
      await pool.query(
        "SELECT coalesce(sum(num_rows_dropped_by_watermark), 0)::int AS n FROM straggler.stream_progress WHERE pipeline = $1",
        [p.name],
      )
    ).rows[0].n as number;
    expect(dropped).toBeGreaterThan(0);
    const runs = (
      await pool.query(
        `SELECT count(*)::int AS runs, coalesce(sum(windows_changed), 0)::int AS changed,
                  count(*) FILTER (WHERE status <> 'succeeded')::int AS not_succeeded
             FROM straggler.correction_runs WHERE pipeline = $1`,
        [p.name],
      )
    ).rows[0] as { runs: number; changed: number; not_succeeded: number };
    expect(runs.changed).toBeGreaterThan(0);
    expect([runs.runs, runs.not_succeeded]).toEqual([concurrentRuns + 1, 0]);

    console.log(
      `[concurrency] ${all.length} lines (${duplicates} duplicates), ${batches} batches, ${concurrentRuns} concurrent correction runs, ` +
        `${dropped} rows dropped by watermark, ${runs.changed} windows changed by corrections, ${rows.length} windows, concurrent phase ${concurrentMs} ms`,
    );
  }, 120_000);
});
