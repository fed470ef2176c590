/**
 * Landing and end to end, each beside plain COPY of the same rows into a
 * table shaped like bronze (the machine's landing limit), alternating
 * A, B, A, B; and landing into bronze partitioned by day beside bronze as
 * one table (`measurePartitionedLanding`, bench/partitionedLanding.ts).
 */
import { createWriteStream, readFileSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import { runMigrations, runMigrationsBefore } from "../src/db/migrate.js";
import { createPool } from "../src/db/pool.js";
import { copyText, inChunks } from "../src/db/copyText.js";
import type { Pool } from "../src/db/pool.js";
import { landFile } from "../src/ingest/landFile.js";
import { runBatch } from "../src/stream/runBatch.js";
import { runUntilCaughtUp } from "../src/stream/streamLoop.js";
import {
  benchPipeline,
  fmt,
  freshDatabase,
  fmtStat,
  now,
  say,
  stat,
  tmp,
  writeEvents,
  type BenchContext,
  type Stat,
} from "./common.js";
import { events, toJsonLine } from "./workload.js";

/** The workload as JSON lines and as COPY text for the reference. */
export interface WorkloadFiles {
  events: string;
  copy: string;
}

/** Creates the reference's table, shaped like bronze. */
export async function createCopyTable(pool: Pool): Promise<void> {
  await pool.query("CREATE TABLE bench_bronze_copy (LIKE straggler.bronze_events INCLUDING ALL)");
}

/** Writes the `n`-event workload both ways. */
export async function writeWorkload(n: number): Promise<WorkloadFiles> {
  const files = { events: path.join(tmp, "events.jsonl"), copy: path.join(tmp, "events.copy") };
  await writeEvents(files.events, n);
  await prepareCopyFile(files.copy, n);
  return files;
}

/**
 * Plain COPY of prepared bronze-shaped rows into an identical table: the
 * machine's landing limit. The table is never emptied: measured beside
 * bronze (A, B, A, B …), both hold the same number of rows at each step.
 * @returns seconds taken
 */
async function plainCopy(pool: Pool, copyFile: string): Promise<number> {
  const c = await pool.connect();
  try {
    const t0 = now();
    await pipe(
      Readable.from(readFileChunks(copyFile)),
      c.query(
        copyFrom(
          "COPY bench_bronze_copy (pipeline, event_id, raw, event_time, ingestion_time, group_key, value, status, reason, detail, source_id, source_line) FROM STDIN",
        ),
      ),
    );
    return (now() - t0) / 1000;
  } finally {
    c.release();
  }
}

function* readFileChunks(file: string): Generator<Buffer> {
  const buf = readFileSync(file);
  for (let i = 0; i < buf.length; i += 1 << 20) yield buf.subarray(i, i + (1 << 20));
}

async function prepareCopyFile(file: string, count: number): Promise<void> {
  async function* lines() {
    let i = 0;
    for (const e of events(count)) {
      i++;
      const raw = toJsonLine(e).trimEnd();
      const t = new Date(e.t).toISOString();
      yield ["bench-copy", e.id, raw, t, t, e.k, e.v, "accepted", null, null, 0, i].map(copyText).join("\t") + "\n";
    }
  }
  await pipe(Readable.from(inChunks(lines())), createWriteStream(file));
}

/**
 * 1. Landing (parse, classify, COPY into bronze) of the workload as pipelines
 * `land-0`, `land-1`, …, each round beside plain COPY.
 * @returns plain COPY's rate, events/s (the limit other figures compare with)
 */
export async function measureLanding(ctx: BenchContext, files: WorkloadFiles): Promise<Stat> {
  const land: number[] = [],
    limit: number[] = [];
  for (let r = 0; r < ctx.rounds; r++) {
    const t0 = now();
    const res = await landFile(ctx.pool, benchPipeline(`land-${r}`), files.events, `events-${r}.jsonl`);
    land.push(res.landed / ((now() - t0) / 1000));
    limit.push(ctx.n / (await plainCopy(ctx.pool, files.copy)));
    say(`landing round ${r}: ${fmt(land[r]!)} vs COPY ${fmt(limit[r]!)} events/s`);
  }
  const landS = stat(land);
  const limitS = stat(limit);
  ctx.row(
    "landing (parse, classify, COPY into bronze)",
    fmtStat(landS, " ev/s"),
    `plain COPY ${fmtStat(limitS, " ev/s")}`,
    `${(landS.median / limitS.median).toFixed(2)} × limit`,
    "≥ 0.6 × limit",
  );
  return limitS;
}

/** 3. End to end: the workload's file in → its results committed by the stream, each round beside plain COPY. */
export async function measureEndToEnd(ctx: BenchContext, files: WorkloadFiles): Promise<void> {
  const e2e: number[] = [],
    e2eLimit: number[] = [];
  for (let r = 0; r < ctx.rounds; r++) {
    const pipeline = benchPipeline(`e2e-${r}`);
    const t0 = now();
    await landFile(ctx.pool, pipeline, files.events, `e2e-${r}.jsonl`);
    await runUntilCaughtUp((t) => runBatch(ctx.pool, pipeline, t), "available-now");
    e2e.push(ctx.n / ((now() - t0) / 1000));
    e2eLimit.push(ctx.n / (await plainCopy(ctx.pool, files.copy)));
    say(`end-to-end round ${r}: ${fmt(e2e[r]!)} vs COPY ${fmt(e2eLimit[r]!)} events/s`);
  }
  const e2eS = stat(e2e),
    e2eLimitS = stat(e2eLimit);
  ctx.row(
    "end to end (file in → results committed)",
    fmtStat(e2eS, " ev/s"),
    `plain COPY ${fmtStat(e2eLimitS, " ev/s")}`,
    `${(e2eS.median / e2eLimitS.median).toFixed(2)} × limit`,
    "≥ 0.5 × limit",
  );
}

/**
 * `days` days of history in bronze: `rows` accepted rows of pipeline `history`, landed
 * evenly over the last `days` days (on a partitioned bronze, in their months' partitions),
 * then VACUUM ANALYZE. Its event ids differ from the workload's: every dedupe probe of
 * the landing then looks in every partition and finds nothing (the probe's worst case).
 */
async function seedHistory(pool: Pool, rows: number, days: number, partitioned: boolean): Promise<void> {
  if (partitioned)
    await pool.query(
      "SELECT straggler.ensure_bronze_partitions((now() AT TIME ZONE 'UTC')::date - $1::int, (now() AT TIME ZONE 'UTC')::date)",
      [days],
    );
  await pool.query(
    `INSERT INTO straggler.bronze_events (pipeline, source_id, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, landed_at)
     SELECT 'history', (SELECT straggler.bronze_source_id('history', 'history.jsonl')), g, 'h' || g, '{}', now() - (g % $2) * interval '1 day', now() - (g % $2) * interval '1 day',
            '"k' || (g % 100) || '"', g % 1000, 'accepted', now() - (($2 - 1) - (g * $2 / ($1 + 1))) * interval '1 day' - interval '1 hour'
       FROM generate_series(1, $1::int) g`,
    [rows, days],
  );
  await pool.query("VACUUM ANALYZE straggler.bronze_events");
}

/**
 * Landing into a partitioned bronze beside an unpartitioned one (issue 16 item 3's target:
 * within 10 %): two databases on one server, one migrated to date (bronze partitioned by
 * month), one to migration 0022 (bronze one table, as before partitioning), each with the same
 * `days` days of history (`historyRows` rows); the workload lands as a new pipeline into
 * each in turn, A, B, A, B.
 * @returns the two rates, events/s
 */
export async function measurePartitionedLanding(
  serverUrl: string,
  opts: { n: number; rounds: number; historyRows: number; days: number },
): Promise<{ partitioned: Stat; unpartitioned: Stat; partitions: number }> {
  const files = await writeWorkload(opts.n);
  const partUrl = await freshDatabase(serverUrl, "straggler_bench_partitioned");
  const flatUrl = await freshDatabase(serverUrl, "straggler_bench_unpartitioned");
  const part = createPool(partUrl, 4),
    flat = createPool(flatUrl, 4);
  try {
    await runMigrations(part);
    await runMigrationsBefore(flat, 23);
    await seedHistory(part, opts.historyRows, opts.days, true);
    await seedHistory(flat, opts.historyRows, opts.days, false);
    const partitions = Number(
      (await part.query("SELECT count(*) AS n FROM pg_inherits WHERE inhparent = 'straggler.bronze_events'::regclass"))
        .rows[0].n,
    );
    say(`history: ${opts.historyRows} rows over ${opts.days} days; partitioned bronze has ${partitions} partitions`);
    const rates = { partitioned: [] as number[], unpartitioned: [] as number[] };
    for (let r = 0; r < opts.rounds; r++) {
      for (const [kind, pool] of [
        ["unpartitioned", flat],
        ["partitioned", part],
      ] as const) {
        const t0 = now();
        const res = await landFile(pool, benchPipeline(`land-${r}`), files.events, `events-${r}.jsonl`);
        rates[kind].push(res.landed / ((now() - t0) / 1000));
        say(`round ${r} ${kind}: ${fmt(rates[kind][r]!)} events/s`);
      }
    }
    return { partitioned: stat(rates.partitioned), unpartitioned: stat(rates.unpartitioned), partitions };
  } finally {
    await part.end();
    await flat.end();
  }
}
