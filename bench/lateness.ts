/**
 * The kept lateness histogram (docs/lateness.md, issue 26 item 2): what it adds to a micro-batch
 * and what the advisor costs with it, against the full replay, at 300,000 accepted rows.
 *
 *   node --import tsx bench/lateness.ts [events]      (DATABASE_URL: a server to make a database on)
 *
 * Workload: `events` (default 300,000) in arrival order, 100 keys, one event every 2 s of arrival
 * time, 1 % of them 1–3 hours late, the rest 0–2 minutes; 10-minute tumbling windows, 10-minute
 * delay, batches of 2,000 rows. Per-batch cost: the histogram's CTEs alone, run over 20 of the
 * batches' `seq` ranges with the pairs table filled as the batch fills it, in a transaction rolled
 * back, twice: with the checkpoint's max event time as it stood before that batch (the real work)
 * and with the final one, which makes every pair late at delay 0 (an upper bound). Printed as a
 * markdown row.
 */
import os from "node:os";
import { Readable } from "node:stream";
import pg from "pg";
import { pipelineSchema } from "../src/config/pipelineSchema.js";
import { createPool } from "../src/db/pool.js";
import { runMigrations } from "../src/db/migrate.js";
import { BATCH_PAIRS } from "../src/db/sql/fragments/batchPairs.js";
import { latenessHistogramCtes } from "../src/db/sql/lateness/histogramUpdate.js";
import { readLatenessHistogramOf } from "../src/db/sql/lateness/histogramRead.js";
import { ensureBatchPairs } from "../src/db/sql/stream/readBatch.js";
import { landStream } from "../src/ingest/landFile.js";
import { latenessReport } from "../src/observe/lateness.js";
import { latenessAdvice } from "../src/observe/latenessAdvice.js";
import { runBatch } from "../src/stream/runBatch.js";
import { fmtStat, now, say, stat } from "./common.js";

const N = Number(process.argv[2] ?? 300_000);
const BATCH = 2_000;
const T0 = Date.parse("2026-10-01T00:00:00Z");

function* lines(): Generator<string> {
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let j = 0; j < N; j++) {
    const arrival = T0 + j * 2_000;
    const late = rand() < 0.01 ? 3_600_000 + Math.floor(rand() * 7_200_000) : Math.floor(rand() * 120_000);
    yield `${JSON.stringify({ id: `e${j}`, t: new Date(arrival - late).toISOString(), i: new Date(arrival).toISOString(), k: `k${j % 100}`, v: j % 10 })}\n`;
  }
}

async function main(): Promise<void> {
  const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const name = `bench_lateness_${process.pid}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), 4);
  try {
    await runMigrations(pool);
    const p = pipelineSchema.parse({
      name: "lateness-bench",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", ingestionTime: "i", groupKey: ["k"], value: "v" },
      timestamps: { format: "iso8601" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
      trigger: { maxRowsPerBatch: BATCH },
    });
    let t = now();
    await landStream(pool, p, Readable.from(lines()), "bench");
    say(`landed ${N} events in ${((now() - t) / 1000).toFixed(1)} s`);
    t = now();
    const durations: number[] = [];
    for (let b; (b = await runBatch(pool, p, "once"));) durations.push(b.durationMs);
    say(`streamed ${durations.length} batches in ${((now() - t) / 1000).toFixed(1)} s`);

    const added: number[] = [],
      worst: number[] = [];
    const client = await pool.connect();
    try {
      await ensureBatchPairs(client);
      const sql = `WITH ${latenessHistogramCtes("windows").replaceAll("$4", "$2").replaceAll("$5", "$3")} x AS (SELECT 1) SELECT 1`;
      for (let i = 0; i < 20; i++) {
        const after = Math.floor((i * durations.length) / 20) * BATCH;
        await client.query("BEGIN");
        await client.query(
          `INSERT INTO ${BATCH_PAIRS} (seq, group_key, value, ws_us, we_us, late)
          SELECT seq, group_key, value, w, w + 600000000, false
            FROM (SELECT seq, group_key, value, ((extract(epoch from event_time) * 1000000)::bigint / 600000000) * 600000000 AS w
                    FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2 AND seq <= $3) b`,
          [p.name, after, after + BATCH],
        );
        let s = now();
        await client.query(sql, [p.name, after, after + BATCH]);
        worst.push(now() - s);
        await client.query("ROLLBACK");
        await client.query("BEGIN");
        await client.query(
          `INSERT INTO ${BATCH_PAIRS} (seq, group_key, value, ws_us, we_us, late)
          SELECT seq, group_key, value, w, w + 600000000, false
            FROM (SELECT seq, group_key, value, ((extract(epoch from event_time) * 1000000)::bigint / 600000000) * 600000000 AS w
                    FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2 AND seq <= $3) b`,
          [p.name, after, after + BATCH],
        );
        await client.query(
          `UPDATE straggler.checkpoints SET max_event_time =
          (SELECT max(event_time) FROM straggler.bronze_events WHERE pipeline = $1 AND seq <= $2) WHERE pipeline = $1`,
          [p.name, after],
        );
        s = now();
        await client.query(sql, [p.name, after, after + BATCH]);
        added.push(now() - s);
        await client.query("ROLLBACK");
      }
    } finally {
      client.release();
    }
    const advice: number[] = [],
      read: number[] = [];
    for (let i = 0; i < 7; i++) {
      const r0 = now();
      await readLatenessHistogramOf(pool, p.name);
      read.push(now() - r0);
      const s = now();
      const r = await latenessAdvice(pool, p);
      advice.push(now() - s);
      if (r.source !== "histogram") throw new Error("the advisor did not read the histogram");
    }
    const replay: number[] = [];
    for (let i = 0; i < 1; i++) {
      const s = now();
      await latenessReport(pool, p);
      replay.push(now() - s);
    }
    const kept = (
      await pool.query("SELECT count(*)::int AS n FROM straggler.lateness_histogram WHERE pipeline = $1", [p.name])
    ).rows[0].n;
    const load = os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ");
    say(`histogram rows ${kept}; load ${load}`);
    console.log(
      `| lateness (${N.toLocaleString("en-US")} rows, ${durations.length} batches of ${BATCH.toLocaleString("en-US")}) | ` +
        `per batch: the histogram's CTEs ${fmtStat(stat(added), " ms")} (every pair late: ${fmtStat(stat(worst), " ms")}) ` +
        `of a batch's ${fmtStat(stat(durations), " ms")}; advisor ${fmtStat(stat(advice), " ms")} (its read ${fmtStat(stat(read), " ms")}) from ${kept.toLocaleString("en-US")} histogram rows against the replay's ${fmtStat(stat(replay), " ms")} | load ${load} |`,
    );
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE ${name}`);
    await admin.end();
  }
}

await main();
