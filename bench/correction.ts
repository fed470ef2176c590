/**
 * 5. Correction of 100 touched windows at bronze 1M and 10M rows (× scale):
 * the run's cost must follow the windows touched, not the history. Beside it,
 * what a dbt / materialized-view user runs to take late data in: a
 * `REFRESH MATERIALIZED VIEW` of the whole aggregate (and `CONCURRENTLY`),
 * over the same history with the same touched windows.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { PipelineConfig } from "../src/config/pipelines.js";
import { runCorrection } from "../src/correction/correct.js";
import type { Pool } from "../src/db/pool.js";
import { landFile } from "../src/ingest/landFile.js";
import { runBatch } from "../src/stream/runBatch.js";
import { runUntilCaughtUp } from "../src/stream/streamLoop.js";
import { benchPipeline, fmt, fmtStat, now, say, stat, tmp, type BenchContext, type Stat } from "./common.js";

/** Bronze of `rows` accepted events for `pipeline`, made in SQL, streamed into final windows. */
async function buildHistory(pool: Pool, pipeline: string, rows: number): Promise<void> {
  const step = 1_000_000;
  for (let from = 0; from < rows; from += step) {
    const n = Math.min(step, rows - from);
    await pool.query(
      `INSERT INTO straggler.bronze_events (pipeline, event_id, raw, event_time, ingestion_time, group_key, value, status, source_id, source_line)
       SELECT $1, 'h' || i, '{}', timestamptz '2025-01-01' + i * interval '1 second', timestamptz '2025-01-01' + i * interval '1 second',
              'k' || (i % 100), (i % 10000) / 100.0, 'accepted', (SELECT straggler.bronze_source_id($1, 'history')), i
         FROM generate_series($2::bigint, $3::bigint) AS i`,
      [pipeline, from, from + n - 1],
    );
    say(`  history ${pipeline}: ${from + n} rows`);
  }
  // As autovacuum would soon after a bulk load of an append-only table: statistics, and the visibility
  // map that lets the correction's read stay in the (covering) index.
  await pool.query("VACUUM (ANALYZE) straggler.bronze_events");
  const config = benchPipeline(pipeline, 2_000_000);
  await runUntilCaughtUp((t) => runBatch(pool, config, t), "available-now");
}

/** The materialized-view reference: `pipeline`'s windows as one aggregate over its whole bronze, with the unique index CONCURRENTLY needs. */
async function createAggregateView(pool: Pool, pipeline: string): Promise<string> {
  const view = `bench_mv_${pipeline.replace(/\W/g, "_")}`;
  await pool.query(`CREATE MATERIALIZED VIEW ${view} AS
    SELECT group_key, to_timestamp(floor(extract(epoch FROM event_time) / 600) * 600) AS window_start, count(*) AS event_count, sum(value) AS value_sum
      FROM straggler.bronze_events WHERE pipeline = '${pipeline}' AND status = 'accepted' GROUP BY 1, 2`);
  await pool.query(`CREATE UNIQUE INDEX ON ${view} (group_key, window_start)`);
  return view;
}

/** Seconds one `REFRESH MATERIALIZED VIEW [CONCURRENTLY] view` takes. */
async function refresh(pool: Pool, view: string, concurrently: boolean): Promise<number> {
  const t0 = now();
  await pool.query(`REFRESH MATERIALIZED VIEW ${concurrently ? "CONCURRENTLY " : ""}${view}`);
  return now() - t0;
}

/**
 * Puts the correction's read index in one of its two shapes and refreshes statistics: `lean`, as migration 0038
 * leaves it ((group_key, event_time), the value read from the heap), or `covering`, as migrations 0022 and 0029
 * made it ((pipeline, group_key, event_time) INCLUDE (value, seq): an index-only read).
 */
async function setCorrectionIndex(pool: Pool, shape: "lean" | "covering"): Promise<void> {
  say(`rebuilding the correction index: ${shape}`);
  await pool.query("DROP INDEX IF EXISTS straggler.bronze_events_key_event_time");
  await pool.query("DROP INDEX IF EXISTS straggler.bronze_events_pipeline_key_event_time");
  await pool.query(
    shape === "lean"
      ? "CREATE INDEX bronze_events_key_event_time ON straggler.bronze_events (group_key, event_time) WHERE status = 'accepted'"
      : "CREATE INDEX bronze_events_pipeline_key_event_time ON straggler.bronze_events (pipeline, group_key, event_time) INCLUDE (value, seq) WHERE status = 'accepted'",
  );
  await pool.query("VACUUM (ANALYZE) straggler.bronze_events");
}

/**
 * Corrects 100 touched windows of each history, alternating. Round 0 is the first run after the
 * bulk load (it ANALYZEs the loaded tables, analyzeIfStale): reported on its own, and only when
 * `roundBase` is 0. The measured rounds follow, at least 5 of them.
 * @param roundBase offset of the rounds' numbers (each round touches other windows)
 */
async function correctionRounds(
  ctx: BenchContext,
  roundBase = 0,
): Promise<{ small: Stat; big: Stat; first: { small: number; big: number } }> {
  const corr = { small: [] as number[], big: [] as number[] };
  const first = { small: 0, big: 0 };
  const corrRounds = Math.max(5, ctx.rounds);
  for (let r = roundBase === 0 ? 0 : 1; r <= corrRounds; r++) {
    for (const [which, name] of [
      ["small", "hist-small"],
      ["big", "hist-big"],
    ] as const) {
      const pipeline = benchPipeline(name, 2_000_000);
      await touchWindows(ctx.pool, pipeline, roundBase + r);
      const s = await runCorrection(ctx.pool, pipeline, { trigger: "cli" });
      if (s.windowsChanged !== 100)
        throw new Error(`expected 100 windows changed, got ${s.windowsChanged}: ${s.error}`);
      if (r === 0) first[which] = s.durationMs;
      else corr[which].push(s.durationMs);
      say(
        `correction round ${roundBase + r} ${name}: ${s.durationMs} ms${r === 0 ? " (first after the bulk load)" : ""}`,
      );
    }
  }
  return { small: stat(corr.small), big: stat(corr.big), first };
}

/** Dirties 100 final windows of `pipeline`: one late accepted event each, registered for correction. */
async function touchWindows(pool: Pool, pipeline: PipelineConfig, round: number): Promise<void> {
  const { rows } = await pool.query(
    `SELECT group_key, window_start FROM straggler.window_results_table WHERE pipeline = $1 AND is_final
      ORDER BY md5(group_key || window_start::text || $2) LIMIT 100`,
    [pipeline.name, String(round)],
  );
  const lines = rows
    .map((r, i) =>
      JSON.stringify({
        id: `late-${round}-${i}`,
        t: new Date(Date.parse(r.window_start) + 1000).toISOString(),
        k: r.group_key,
        v: "1.00",
      }),
    )
    .join("\n");
  const file = path.join(tmp, `late-${pipeline.name}-${round}.jsonl`);
  writeFileSync(file, lines + "\n");
  await landFile(pool, pipeline, file, path.basename(file));
  const b = await runBatch(pool, pipeline, "once");
  if (b?.numLateWindows !== 100) throw new Error(`expected 100 late windows, got ${b?.numLateWindows}`);
}

/**
 * Builds the two histories, then corrects 100 touched windows of each, alternating
 * (`correctionRounds`), with the correction index as migration 0038 leaves it and again with the
 * covering index it replaced. Then the materialized-view references over the same histories (with the last round's late events in
 * bronze): `rounds` full refreshes and `rounds` concurrent ones of each, alternating.
 */
export async function measureCorrection(ctx: BenchContext): Promise<void> {
  const small = Math.round(1_000_000 * ctx.scale),
    big = Math.round(10_000_000 * ctx.scale);
  await buildHistory(ctx.pool, "hist-small", small);
  await buildHistory(ctx.pool, "hist-big", big);
  const lean = await correctionRounds(ctx);
  const { small: cs, big: cb } = lean;
  ctx.row(
    `correction of 100 touched windows, bronze ${big.toLocaleString("en-US")} rows ((group_key, event_time) index, migration 0038)`,
    `${fmtStat(cb, " ms")}; first run after the bulk load (with ANALYZE) ${fmt(lean.first.big)} ms`,
    `itself at ${small.toLocaleString("en-US")} rows: ${fmtStat(cs, " ms")}; first run ${fmt(lean.first.small)} ms`,
    `${(cb.median / cs.median).toFixed(2)} × (10× history)`,
    "≤ 1 s and ≤ 1.5 ×",
  );
  // The same rounds with the covering index of migrations 0022 and 0029 (an index-only read, 104 B per event), then the lean one again.
  await setCorrectionIndex(ctx.pool, "covering");
  const covering = await correctionRounds(ctx, 100);
  await setCorrectionIndex(ctx.pool, "lean");
  ctx.row(
    `correction of 100 touched windows, bronze ${big.toLocaleString("en-US")} rows, covering index of 0022 to 0037 under the 0038 statement (which leaves it no leading column: not a like-for-like figure)`,
    fmtStat(covering.big, " ms"),
    `itself at ${small.toLocaleString("en-US")} rows: ${fmtStat(covering.small, " ms")}`,
    `${(covering.big.median / covering.small.median).toFixed(2)} × (10× history)`,
    "",
  );

  const views = {
    small: await createAggregateView(ctx.pool, "hist-small"),
    big: await createAggregateView(ctx.pool, "hist-big"),
  };
  const full = { small: [] as number[], big: [] as number[] },
    conc = { small: [] as number[], big: [] as number[] };
  for (let r = 0; r < ctx.rounds; r++) {
    for (const which of ["small", "big"] as const) {
      full[which].push(await refresh(ctx.pool, views[which], false));
      conc[which].push(await refresh(ctx.pool, views[which], true));
      say(`refresh round ${r} ${which}: ${fmt(full[which][r]!)} ms, concurrently ${fmt(conc[which][r]!)} ms`);
    }
  }
  for (const [which, rows, c] of [
    ["small", small, cs],
    ["big", big, cb],
  ] as const) {
    const f = stat(full[which]),
      k = stat(conc[which]);
    ctx.row(
      `correction of 100 touched windows vs refreshing the whole aggregate, bronze ${rows.toLocaleString("en-US")} rows`,
      `correction ${fmtStat(c, " ms")}`,
      `REFRESH MATERIALIZED VIEW ${fmtStat(f, " ms")}; CONCURRENTLY ${fmtStat(k, " ms")}`,
      `${fmt(f.median / c.median)} × / ${fmt(k.median / c.median)} × faster`,
      which === "big" ? "≥ 100 × faster than the full refresh" : "",
    );
  }
}
