/**
 * `npm run bench [-- --scale 1 --rounds 3]`: measures Straggler side by side
 * with its references in one process run (A, B, A, B …), prints a table and
 * writes it at the top of BENCHMARKS.md (the sections below it, from its
 * first `## ` heading, are kept). Prepares its own data in a fresh database
 * `straggler_bench` on the configured server (embedded unless DATABASE_URL).
 *
 * Scale 1: 1M events for landing / stream / end-to-end, bronze of 1M and 10M
 * rows for the correction, replays of 1M and 10M events for memory. A small
 * scale (0.01) is the CI smoke run: it checks the benchmark works, asserts
 * nothing.
 *
 * One module per section: landing.ts (landing, end to end), stream.ts (with
 * the naive and hand-written SQL references), freshness.ts, httpIngest.ts
 * (group commit beside one transaction per request), correction.ts (with the
 * materialized-view references), replay.ts (memory, the taxi demo), nats.ts
 * (the NATS JetStream source; skipped without nats-server), peers.ts (the peers workload beside the
 * minimal ledger and COPY + REFRESH MATERIALIZED VIEW; skipped without ../shared/bench).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Command } from "commander";
import pg from "pg";
import { loadEnv } from "../src/config/env.js";
import { openDatabase } from "../src/db/open.js";
import { runMigrations } from "../src/db/migrate.js";
import { createPool } from "../src/db/pool.js";
import { log, ROOT, say, type BenchContext, type Stat } from "./common.js";
import { measureCorrection } from "./correction.js";
import { measureFreshness } from "./freshness.js";
import { measureHttpIngest } from "./httpIngest.js";
import { measureNats } from "./nats.js";
import { createCopyTable, measureEndToEnd, measureLanding, writeWorkload } from "./landing.js";
import { measurePeers } from "./peers.js";
import { measureCutover } from "./cutover.js";
import { measureReplayMemory, measureTaxiReplay } from "./replay.js";
import { createDbaTable, createNaiveTable, measureBatchFixedCost, measureStream } from "./stream.js";
import { lateShare } from "./workload.js";

/** Creates the database `straggler_bench` afresh on the server at `serverUrl`. @returns its URL and the server's version */
async function freshBenchDatabase(serverUrl: string): Promise<{ url: string; version: string }> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query("DROP DATABASE IF EXISTS straggler_bench WITH (FORCE)");
  await admin.query("CREATE DATABASE straggler_bench");
  const version = (await admin.query("SHOW server_version")).rows[0].server_version as string;
  await admin.end();
  const u = new URL(serverUrl);
  u.pathname = "/straggler_bench";
  return { url: u.toString(), version };
}

async function main(): Promise<void> {
  const opts = new Command("bench")
    .option("--scale <n>", "size: 1 = 1M events", "1")
    .option("--rounds <n>", "rounds per measurement", "3")
    .option("--out <file>", "markdown output", "BENCHMARKS.md")
    .option(
      "--peers-sizes <list>",
      "the peers section's workload sizes in events (before --scale), comma-separated, e.g. 300000",
      "300000,1000000,10000000",
    )
    .option(
      "--cutover-sizes <list>",
      "the cutover section's pipeline sizes in events (before --scale), comma-separated, e.g. 1000000,10000000",
      "1000000",
    )
    .option(
      "--only <figure>",
      "run only these figures: freshness, http, correction, microbatch (the micro-batch's fixed cost, freshness and the taxi demo), nats, peers (the peers workload beside the minimal ledger and COPY + REFRESH), cutover (a rebuilt candidate cut over and rolled back)",
    )
    .parse()
    .opts();
  const only = opts.only as string | undefined;
  const scale = Number(opts.scale),
    rounds = Number(opts.rounds);
  if (!(scale > 0) || !(rounds >= 1)) throw new Error("--scale must be > 0 and --rounds >= 1");
  if (
    only !== undefined &&
    !["freshness", "http", "correction", "microbatch", "nats", "peers", "cutover"].includes(only)
  )
    throw new Error("--only: expected freshness, http, correction, microbatch, nats, peers or cutover");
  const sizes = (flag: string, value: unknown): number[] => {
    const list = String(value).split(",").map(Number);
    if (!list.every((x) => Number.isInteger(x) && x > 0))
      throw new Error(`${flag}: expected positive integers separated by commas`);
    return list;
  };
  const peersSizes = sizes("--peers-sizes", opts.peersSizes),
    cutoverSizes = sizes("--cutover-sizes", opts.cutoverSizes);
  const n = Math.max(2000, Math.round(1_000_000 * scale));
  const env = loadEnv();
  const server = await openDatabase(env, log, { migrate: false });
  // A run that fails stops the embedded server too (left running, it would refuse the next run its port).
  closeServer = () => server.close();
  const { url, version } = await freshBenchDatabase(server.url);
  const pool = createPool(url, 10);
  await runMigrations(pool);
  await createCopyTable(pool);
  await createNaiveTable(pool);
  await createDbaTable(pool);
  const table: string[][] = [];
  const ctx: BenchContext = {
    pool,
    url,
    env,
    scale,
    rounds,
    n,
    peersSizes,
    row: (...cells) => {
      table.push(cells);
      say(`| ${cells.join(" | ")} |`); // also on stderr at once: a run cut short keeps what it measured
    },
  };
  say(
    `scale ${scale}: ${n} events, ${rounds} rounds; PostgreSQL ${version}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
  );

  let dropShare = 0;
  let limit: Stat | undefined;
  if (only === undefined) {
    const files = await writeWorkload(n);
    limit = await measureLanding(ctx, files);
    dropShare = await measureStream(ctx);
    await measureBatchFixedCost(ctx);
    await measureEndToEnd(ctx, files);
    // The bulk sections above leave work for autovacuum; done now, it does not run during the
    // freshness measurement (which would then measure the server's background work).
    say("vacuuming after the bulk sections");
    await pool.query("VACUUM (ANALYZE) straggler.bronze_events, straggler.window_results_table, bench_bronze_copy");
  }
  if (only === "microbatch") await measureBatchFixedCost(ctx);
  if (only === undefined || only === "freshness" || only === "microbatch") await measureFreshness(ctx);
  if (only === undefined || only === "http") await measureHttpIngest(ctx);
  if (only === undefined || only === "correction") await measureCorrection(ctx);
  if (only === undefined) {
    await measureReplayMemory(ctx);
  }
  if (only === undefined || only === "microbatch") await measureTaxiReplay(ctx, limit);
  if (only === undefined || only === "nats") await measureNats(ctx);
  if (only === undefined || only === "peers") await measurePeers(ctx);
  if (only === undefined || only === "cutover") await measureCutover(ctx, cutoverSizes);
  const md = [
    `# Benchmarks`,
    ``,
    `\`npm run bench -- --scale ${scale} --rounds ${rounds}\` on ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, PostgreSQL ${version} (${server.kind}), Node ${process.version}.`,
    ``,
    `Workload: ${n.toLocaleString("en-US")} events, 100 group keys, 10-minute tumbling windows, 10-minute watermark delay, Pareto lateness: ${(100 * lateShare(n)).toFixed(1)} % of events arrive after the watermark (watermark advancing per event); at 100,000-event micro-batches ${dropShare.toFixed(1)} % of (event, window) pairs were dropped by the watermark. Each measurement alternates with its reference in the same run; medians with (min–max, rounds).`,
    ``,
    `| figure | Straggler | reference | ratio | target |`,
    `| --- | --- | --- | --- | --- |`,
    ...table.map((r) => `| ${r.join(" | ")} |`),
    ``,
  ].join("\n");
  process.stdout.write(md + "\n");
  const out = path.resolve(ROOT, opts.out as string);
  // The sections written by hand below the table (from the first "## " heading on) are kept.
  const before = existsSync(out) ? readFileSync(out, "utf8") : "";
  const kept = /^## /m.exec(before);
  writeFileSync(out, kept ? `${md}\n${before.slice(kept.index)}` : md);
  await pool.end();
  await server.close();
}

/** Stops the database server `main` opened (set once it is open). */
let closeServer: (() => Promise<void>) | undefined;

main().then(
  () => process.exit(0),
  async (e) => {
    console.error(`bench: ${(e as Error).stack ?? e}`);
    await closeServer?.().catch(() => undefined);
    process.exit(1);
  },
);
