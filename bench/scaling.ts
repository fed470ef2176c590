/**
 * The figures of docs/SCALING.md that `npm run bench` does not give, printed:
 *
 * - bronze and results size per million events (the bench workload: 100
 *   keys, 10-minute windows), after landing and streaming `--events` events;
 * - shards on one machine: `--events` events landed and streamed by one
 *   `straggler ingest --stream` process into one database, against the same
 *   number split over `--shards` processes each with a database of its own,
 *   run at the same time (databases on one server standing in for shards),
 *   alternating, `--rounds` times.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/scaling.ts --events 200000 --shards 2 --rounds 2
 *
 * The databases `straggler_scaling_*` are created and dropped again.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Command } from "commander";
import pg from "pg";
import { fmt, fmtStat, now, ROOT, say, stat, tmp, writeEvents } from "./common.js";

const opts = new Command()
  .option("--events <n>", "events landed per measurement", "200000")
  .option("--shards <n>", "databases (and processes) the events are split over", "2")
  .option("--rounds <n>", "alternating rounds of one database vs the shards", "2")
  .parse()
  .opts<{ events: string; shards: string; rounds: string }>();
const EVENTS = Number(opts.events),
  SHARDS = Number(opts.shards),
  ROUNDS = Number(opts.rounds);
const ADMIN = process.env.DATABASE_URL;
if (!ADMIN) throw new Error("set DATABASE_URL to a PostgreSQL server where this user may create databases");

const urlOf = (db: string) => Object.assign(new URL(ADMIN), { pathname: `/${db}` }).toString();

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: ADMIN });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A fresh database `straggler_scaling_<name>`; its URL. */
async function freshDatabase(name: string): Promise<string> {
  await admin(`DROP DATABASE IF EXISTS straggler_scaling_${name} WITH (FORCE)`);
  await admin(`CREATE DATABASE straggler_scaling_${name}`);
  return urlOf(`straggler_scaling_${name}`);
}

/** The bench pipeline (bench/common.ts) as a pipelines file. */
function configFile(): string {
  const file = path.join(tmp, "scaling.yaml");
  writeFileSync(
    file,
    `pipelines:
  - name: scaling
    source: { format: jsonl }
    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
    trigger: { maxRowsPerBatch: 100000 }
    admission: { maxFutureSkew: null }
`,
  );
  return file;
}

/** `straggler migrate` then `straggler ingest -p scaling <file> --stream` against `url`; resolves with the ingest's wall time, ms. */
async function ingest(url: string, file: string, config: string): Promise<number> {
  const run = (args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "src/cli/main.ts"), ...args], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: url, STRAGGLER_PIPELINES: config },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let err = "";
      child.stderr!.on("data", (d) => (err += d));
      child.on("exit", (code) =>
        code === 0 ? resolve() : reject(new Error(`straggler ${args.join(" ")} exited ${code}: ${err}`)),
      );
    });
  await run(["migrate"]);
  const started = now();
  await run(["ingest", "-p", "scaling", file, "--stream"]);
  return now() - started;
}

async function sizes(
  url: string,
): Promise<{ bronze: number; bronzeIndexes: number; results: number; windows: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    // Bronze is partitioned (migration 0023): its size is its partitions' (the parent itself holds nothing).
    const { rows } =
      await c.query(`SELECT (SELECT sum(pg_table_size(relid)) FROM pg_partition_tree('straggler.bronze_events') WHERE isleaf) AS bronze,
                                           (SELECT sum(pg_indexes_size(relid)) FROM pg_partition_tree('straggler.bronze_events') WHERE isleaf) AS bronze_indexes,
                                           pg_total_relation_size('straggler.window_results_table') AS results,
                                           (SELECT count(*) FROM straggler.window_results_table) AS windows`);
    const r = rows[0];
    return {
      bronze: Number(r.bronze),
      bronzeIndexes: Number(r.bronze_indexes),
      results: Number(r.results),
      windows: Number(r.windows),
    };
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const dir = path.join(tmp, "scaling");
  mkdirSync(dir, { recursive: true });
  const whole = path.join(dir, "whole.jsonl"),
    part = path.join(dir, "part.jsonl");
  await writeEvents(whole, EVENTS);
  await writeEvents(part, Math.ceil(EVENTS / SHARDS));
  const config = configFile();
  const one: number[] = [],
    sharded: number[] = [];
  let size: Awaited<ReturnType<typeof sizes>> | undefined;
  for (let round = 1; round <= ROUNDS; round++) {
    const single = await freshDatabase("one");
    one.push(await ingest(single, whole, config));
    size ??= await sizes(single);
    say(`round ${round}: one database ${fmt(one.at(-1)!)} ms`);
    const urls = await Promise.all(Array.from({ length: SHARDS }, (_, i) => freshDatabase(`shard${i}`)));
    const started = now();
    await Promise.all(urls.map((u) => ingest(u, part, config)));
    sharded.push(now() - started);
    say(`round ${round}: ${SHARDS} shards ${fmt(sharded.at(-1)!)} ms`);
  }
  for (const name of ["one", ...Array.from({ length: SHARDS }, (_, i) => `shard${i}`)])
    await admin(`DROP DATABASE IF EXISTS straggler_scaling_${name} WITH (FORCE)`);
  const perM = (bytes: number) => `${fmt(((bytes / EVENTS) * 1e6) / 2 ** 20)} MiB`;
  const rate = (ms: number[]) => stat(ms.map((t) => (EVENTS / t) * 1000));
  console.log(
    `events: ${EVENTS}; bronze per 1M events: table ${perM(size!.bronze)} + indexes ${perM(size!.bronzeIndexes)}; results: ${size!.windows} windows in ${fmt(size!.results / 2 ** 20)} MiB`,
  );
  console.log(`land + stream, one database, one process: ${fmtStat(rate(one), " ev/s")}`);
  console.log(
    `land + stream, ${SHARDS} databases, ${SHARDS} processes at once: ${fmtStat(rate(sharded), " ev/s")} in total`,
  );
  console.log(
    `load average after the run: ${(await import("node:os"))
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
}

await main();
