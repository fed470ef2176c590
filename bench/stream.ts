/**
 * 2. The stream's rate by micro-batch size (watermark + MERGE) over the
 * landed workload, beside two references:
 * - naive: one INSERT … ON CONFLICT DO UPDATE per event, autocommit;
 * - what a DBA writes by hand: each micro-batch (the same number of rows) as
 *   one set-based INSERT … SELECT … GROUP BY … ON CONFLICT DO UPDATE, no
 *   watermark, no late handling, no progress: the floor for the stream's cost.
 *
 * Also the fixed cost of one small micro-batch beside a one-row write
 * transaction (measureBatchFixedCost).
 */
import { formatInstant, isoToUs } from "../src/core/instants.js";
import { assignWindows } from "../src/core/windows.js";
import type { RawRecord } from "../src/core/admission.js";
import type { Pool } from "../src/db/pool.js";
import { landRecords } from "../src/ingest/copyToBronze.js";
import { analyzeIfStale } from "../src/db/statistics.js";
import { runBatch } from "../src/stream/runBatch.js";
import { runUntilCaughtUp } from "../src/stream/streamLoop.js";
import { benchPipeline, fmt, fmtStat, now, say, stat, type BenchContext } from "./common.js";

const BATCH_SIZES = [1_000, 10_000, 100_000];

/** Creates the naive reference's results table. */
export async function createNaiveTable(pool: Pool): Promise<void> {
  await pool.query(`CREATE TABLE bench_naive_results (group_key text, window_start timestamptz, window_end timestamptz, event_count bigint, value_sum numeric,
                    PRIMARY KEY (group_key, window_start, window_end))`);
}

/** Creates the hand-written reference's results table (its primary key is the ON CONFLICT target). */
export async function createDbaTable(pool: Pool): Promise<void> {
  await pool.query(`CREATE TABLE bench_dba_results (group_key text, window_start timestamptz, window_end timestamptz, event_count bigint, value_sum numeric,
                    PRIMARY KEY (group_key, window_start, window_end))`);
}

/**
 * What a DBA writes by hand, per micro-batch: the accepted rows of one seq
 * range, assigned to their 10-minute window in SQL and upserted set-based.
 * $1 pipeline, $2/$3 the range (exclusive, inclusive).
 */
const DBA_BATCH_SQL = `INSERT INTO bench_dba_results AS r (group_key, window_start, window_end, event_count, value_sum)
SELECT group_key, w, w + interval '10 minutes', count(*), sum(value)
  FROM (SELECT group_key, value, to_timestamp(floor(extract(epoch FROM event_time) / 600) * 600) AS w
          FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2 AND seq <= $3 AND status = 'accepted') b
 GROUP BY group_key, w
ON CONFLICT (group_key, window_start, window_end) DO UPDATE
   SET event_count = r.event_count + excluded.event_count, value_sum = r.value_sum + excluded.value_sum`;

/** The hand-written reference over all of `pipeline`'s bronze in micro-batches of `batch` rows, each its own transaction (autocommit). @returns events/s */
async function dbaStream(pool: Pool, pipeline: string, batch: number): Promise<number> {
  await pool.query("TRUNCATE bench_dba_results");
  const { rows } = await pool.query(
    "SELECT min(seq) AS lo, max(seq) AS hi, count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1",
    [pipeline],
  );
  const { lo, hi, n } = rows[0] as { lo: number; hi: number; n: number };
  const c = await pool.connect();
  try {
    const t0 = now();
    // Ranges of `batch` seqs: the pipeline landed in one COPY, so its seqs are contiguous.
    for (let from = lo - 1; from < hi; from += batch)
      await c.query(DBA_BATCH_SQL, [pipeline, from, Math.min(hi, from + batch)]);
    return n / ((now() - t0) / 1000);
  } finally {
    c.release();
  }
}

/** Forgets what the stream of `pipeline` did, so that it reads its bronze again from the start. */
async function resetStream(pool: Pool, pipeline: string): Promise<void> {
  for (const t of ["checkpoints", "window_results_table", "batch_progress", "late_windows", "late_events"]) {
    await pool.query(`DELETE FROM straggler.${t} WHERE pipeline = $1`, [pipeline]);
  }
}

/** Naive reference: one INSERT … ON CONFLICT DO UPDATE per event, autocommit. */
async function naiveStream(pool: Pool, pipeline: string, limit: number): Promise<{ seconds: number; rows: number }> {
  await pool.query("TRUNCATE bench_naive_results");
  const { rows } = await pool.query(
    "SELECT group_key, event_time, value FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'accepted' ORDER BY seq LIMIT $2",
    [pipeline, limit],
  );
  const c = await pool.connect();
  try {
    const t0 = now();
    for (const r of rows) {
      const w = assignWindows(isoToUs(r.event_time), { sizeMs: 600_000, slideMs: 600_000, offsetMs: 0 })[0]!;
      await c.query(
        `INSERT INTO bench_naive_results (group_key, window_start, window_end, event_count, value_sum) VALUES ($1, $2, $3, 1, $4)
         ON CONFLICT (group_key, window_start, window_end) DO UPDATE
           SET event_count = bench_naive_results.event_count + 1, value_sum = bench_naive_results.value_sum + excluded.value_sum`,
        [r.group_key, formatInstant(w.startUs), formatInstant(w.endUs), r.value],
      );
    }
    return { seconds: (now() - t0) / 1000, rows: rows.length };
  } finally {
    c.release();
  }
}

/**
 * Streams `land-0` (landed by measureLanding) again at each batch size, each round, beside the hand-written
 * set-based upsert at the same batch size; then the naive reference.
 * @returns the share of (event, window) pairs dropped by the watermark at 100,000-event batches, %
 */
export async function measureStream(ctx: BenchContext): Promise<number> {
  const naiveN = Math.min(ctx.n, Math.max(2000, Math.round(20_000 * Math.min(1, ctx.scale * 10))));
  const streamRates = new Map<number, number[]>(),
    dbaRates = new Map<number, number[]>();
  const naive: number[] = [];
  let dropped = 0,
    input = 0;
  for (let r = 0; r < ctx.rounds; r++) {
    for (const batch of BATCH_SIZES) {
      const pipeline = benchPipeline("land-0", batch);
      await resetStream(ctx.pool, pipeline.name);
      await analyzeIfStale(ctx.pool);
      const t0 = now();
      const progress = await runUntilCaughtUp((t) => runBatch(ctx.pool, pipeline, t), "available-now");
      const secs = (now() - t0) / 1000;
      const rows = progress.reduce((n, b) => n + b.numInputRows, 0);
      if (batch === 100_000) {
        dropped = progress.reduce((n, b) => n + b.numRowsDroppedByWatermark, 0);
        input = rows;
      }
      streamRates.set(batch, [...(streamRates.get(batch) ?? []), rows / secs]);
      const dba = await dbaStream(ctx.pool, "land-0", batch);
      dbaRates.set(batch, [...(dbaRates.get(batch) ?? []), dba]);
      say(`stream round ${r} batch ${batch}: ${fmt(rows / secs)} events/s; hand-written upsert ${fmt(dba)} events/s`);
    }
    const nv = await naiveStream(ctx.pool, "land-0", naiveN);
    naive.push(nv.rows / nv.seconds);
    say(`naive round ${r}: ${fmt(nv.rows / nv.seconds)} events/s`);
  }
  const naiveS = stat(naive);
  for (const batch of BATCH_SIZES) {
    const s = stat(streamRates.get(batch)!);
    ctx.row(
      `stream, ${batch.toLocaleString("en-US")}-event batches (watermark + MERGE)`,
      fmtStat(s, " ev/s"),
      `naive per-event upsert ${fmtStat(naiveS, " ev/s")}`,
      `${(s.median / naiveS.median).toFixed(1)} × naive`,
      batch === 100_000 ? "≥ 200k ev/s and ≥ 20 × naive" : "",
    );
  }
  for (const batch of BATCH_SIZES) {
    const s = stat(streamRates.get(batch)!),
      d = stat(dbaRates.get(batch)!);
    ctx.row(
      `stream vs hand-written SQL, ${batch.toLocaleString("en-US")}-event batches`,
      fmtStat(s, " ev/s"),
      `one INSERT … SELECT … GROUP BY … ON CONFLICT DO UPDATE per batch, no watermark: ${fmtStat(d, " ev/s")}`,
      `${(s.median / d.median).toFixed(2)} × hand-written`,
      "",
    );
  }
  return input > 0 ? (100 * dropped) / input : 0;
}

/** Events per micro-batch in the fixed-cost measurement: issue 15's "~100 events". */
const SMALL_BATCH = 100;

/** `SMALL_BATCH` on-time events for 10 keys, 0.1 s apart, starting `startMs`. */
async function* smallBatch(startMs: number, first: number): AsyncGenerator<RawRecord> {
  for (let i = 0; i < SMALL_BATCH; i++) {
    const n = first + i;
    const fields = { id: `s${n}`, t: new Date(startMs + i * 100).toISOString(), k: `k${n % 10}`, v: "1.25" };
    yield { line: i + 1, raw: JSON.stringify(fields), fields };
  }
}

/**
 * The fixed cost of one micro-batch (issue 15: ~100 events, no late rows): a
 * fresh pipeline gets 100 on-time events per landing, event time advancing 10
 * s per batch (10-minute windows, 10-minute delay: windows close as it goes),
 * and each micro-batch is timed on its own, beside the floor of any batch
 * that commits durably, timed right after it: a transaction writing one row
 * (BEGIN, UPDATE, COMMIT: three round trips and one WAL flush).
 * Batches: 300 × rounds, the first 20 of each round not counted (connections, plans).
 */
export async function measureBatchFixedCost(ctx: BenchContext): Promise<void> {
  const batchMs: number[] = [],
    floorMs: number[] = [];
  await ctx.pool.query("CREATE TABLE IF NOT EXISTS bench_floor (id int PRIMARY KEY, n bigint NOT NULL)");
  await ctx.pool.query("INSERT INTO bench_floor VALUES (1, 0) ON CONFLICT DO NOTHING");
  const perRound = 300,
    warmUp = 20;
  for (let r = 0; r < ctx.rounds; r++) {
    const pipeline = benchPipeline(`fixed-${r}`, 100_000);
    const start = Date.parse("2026-03-01T00:00:00Z");
    for (let b = 0; b < perRound; b++) {
      await landRecords(ctx.pool, pipeline, `fixed:${b}`, smallBatch(start + b * 10_000, b * SMALL_BATCH), {
        landingTimeMs: Date.now(),
      });
      const t0 = now();
      const progress = await runBatch(ctx.pool, pipeline, "once");
      const t1 = now();
      if (progress?.numInputRows !== SMALL_BATCH || progress.numRowsDroppedByWatermark !== 0)
        throw new Error(`fixed-cost batch ${b}: expected ${SMALL_BATCH} on-time rows, got ${JSON.stringify(progress)}`);
      const c = await ctx.pool.connect();
      try {
        const t2 = now();
        await c.query("BEGIN");
        await c.query("UPDATE bench_floor SET n = n + 1 WHERE id = 1");
        await c.query("COMMIT");
        if (b >= warmUp) floorMs.push(now() - t2);
      } finally {
        c.release();
      }
      if (b >= warmUp) batchMs.push(t1 - t0);
    }
    say(
      `fixed cost round ${r}: median ${fmt(stat(batchMs.slice(-(perRound - warmUp))).median)} ms per ${SMALL_BATCH}-event micro-batch`,
    );
  }
  const s = stat(batchMs),
    f = stat(floorMs);
  const pct = (xs: number[], q: number) =>
    [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
  ctx.row(
    `fixed cost of one micro-batch (${SMALL_BATCH} events, no late rows), ${fmt(s.n)} batches`,
    `median ${fmt(s.median)} ms, p90 ${fmt(pct(batchMs, 0.9))} ms`,
    `one-row write transaction (BEGIN, UPDATE, COMMIT) median ${fmt(f.median)} ms`,
    `${(s.median / f.median).toFixed(1)} × one-row transaction`,
    "≤ 5 ms",
  );
}
