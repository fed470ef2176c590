/**
 * HTTP ingest on the load test's workload (test/integration/load.test.ts):
 * 50-event NDJSON requests on 8 keep-alive connections to a running service
 * (stream loop included), with group commit and with one transaction per
 * request (`STRAGGLER_GROUP_COMMIT=off`), alternating rounds; then the
 * curve: both at 4, 16 and 32 connections, one round each. The load
 * generator runs in a thread of its own (bench/httpLoad.ts). Each round
 * checks that nothing was lost: every acknowledged request's events are in
 * bronze, once. Each round also prints where the CPU went: the machine's
 * cores, the bench process (service and load generator), the service's event
 * loop, the load generator's thread, the database server's processes (from
 * /proc on Linux), and the requests per group.
 */
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import type { Pool } from "../src/db/pool.js";
import { groupCommitTotals } from "../src/ingest/groupLanding.js";
import { startService } from "../src/service.js";
import { benchPipeline, fmt, fmtStat, log, stat, tmp, say, type BenchContext } from "./common.js";
import { runLoad } from "./httpLoad.js";

const EVENTS_PER_REQUEST = 50,
  CONNECTIONS = 8;
/** Connections of the curve after the A/B rounds; `BENCH_HTTP_CURVE=off` skips it (a quick A/B). */
const CURVE = process.env.BENCH_HTTP_CURVE === "off" ? [] : [4, 16, 32];
const TOKEN = "bench-token-0123456789";

interface IngestRound {
  eventsPerSecond: number;
  p50: number;
  p99: number;
  requests: number;
  /** Busy share of the machine's cores (all processes), of the service's event loop, of the load generator's thread (0–1). */
  machine: number;
  /** CPU of the bench process (service and load generator, all threads) and of the database server, in cores (1 = one core busy); server undefined without /proc. */
  process: number;
  server: number | undefined;
  service: number;
  client: number;
  /** Requests per committed group (group commit only). */
  perGroup: number | undefined;
}

/** Clock ticks per second of /proc's CPU times (Linux: `getconf CLK_TCK`, 100 everywhere it is built for). */
const CLK_TCK = 100;

/**
 * CPU time so far of the database server `postmasterPid` and its processes (backends, WAL writer, …),
 * those still running and those it has reaped, ms, from /proc (Linux); undefined where there is no /proc.
 */
function serverCpuMs(postmasterPid: number | undefined): number | undefined {
  if (postmasterPid === undefined) return undefined;
  try {
    let ticks = 0;
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      } catch {
        continue; // ended meanwhile
      }
      // After "(comm)": state ppid … utime (14th field) stime (15th) cutime (16th) cstime (17th). The
      // postmaster's cutime and cstime hold the processes it has reaped: a backend that ends between two
      // readings moves its time there instead of leaving the sum (which made a round's figure negative).
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pid) === postmasterPid) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
      else if (Number(f[1]) === postmasterPid) ticks += Number(f[11]) + Number(f[12]);
    }
    return (ticks * 1000) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/** The server's postmaster: the parent of this session's backend (/proc, Linux); undefined elsewhere. */
async function postmasterOf(pool: Pool): Promise<number | undefined> {
  const pid = (await pool.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
  try {
    return Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  } catch {
    return undefined; // not Linux, or the server runs elsewhere
  }
}

/** Busy and total CPU time of every core so far, ms. */
function machineTimes(): { busy: number; total: number } {
  let busy = 0,
    total = 0;
  for (const c of os.cpus()) {
    const t = c.times.user + c.times.nice + c.times.sys + c.times.irq + c.times.idle;
    total += t;
    busy += t - c.times.idle;
  }
  return { busy, total };
}

/**
 * One round: `seconds` of load on pipeline `name` through a service started with group commit on or off.
 * @throws Error when a request was not answered 201 or an acknowledged event is not in bronze exactly once
 */
async function ingestRound(
  ctx: Pick<BenchContext, "pool" | "url" | "env">,
  name: string,
  groupCommit: boolean,
  seconds: number,
  connections = CONNECTIONS,
): Promise<IngestRound> {
  const pipeline = benchPipeline(name, 100_000, path.join(tmp, `${name}-landing`));
  const db = { pool: ctx.pool, url: ctx.url, kind: "external" as const, close: async () => undefined };
  const service = await startService(
    { ...ctx.env, PORT: 0, STRAGGLER_API_TOKEN: TOKEN, STRAGGLER_GROUP_COMMIT: groupCommit ? "on" : "off" },
    db,
    [pipeline],
    log,
  );
  const postmaster = await postmasterOf(ctx.pool);
  const groupsBefore = groupCommitTotals();
  const cpuBefore = machineTimes();
  const processBefore = process.cpuUsage();
  const serverBefore = serverCpuMs(postmaster);
  const startedAt = performance.now();
  const loopBefore = performance.eventLoopUtilization();
  let load: Awaited<ReturnType<typeof runLoad>>;
  try {
    load = await runLoad({
      url: `http://127.0.0.1:${service.port}`,
      pipeline: name,
      token: TOKEN,
      connections,
      seconds,
      eventsPerRequest: EVENTS_PER_REQUEST,
    });
  } finally {
    await service.stop();
  }
  const serviceBusy = performance.eventLoopUtilization(loopBefore).utilization;
  const elapsed = performance.now() - startedAt;
  const processCpu = process.cpuUsage(processBefore);
  const serverAfter = serverCpuMs(postmaster);
  const cpuAfter = machineTimes();
  const groupsAfter = groupCommitTotals();
  if (load.non2xx + load.errors + load.timeouts > 0)
    throw new Error(`${name}: ${load.non2xx} non-2xx answers, ${load.errors} errors, ${load.timeouts} timeouts`);
  await checkNothingLost(ctx.pool, name, load.sources, load.acknowledged);
  const groups = groupsAfter.groups - groupsBefore.groups;
  return {
    eventsPerSecond: load.acknowledged / seconds,
    p50: load.p50,
    p99: load.p99,
    requests: load.sources.length,
    machine: (cpuAfter.busy - cpuBefore.busy) / (cpuAfter.total - cpuBefore.total),
    service: serviceBusy,
    client: load.busy,
    process: (processCpu.user + processCpu.system) / 1000 / elapsed,
    server:
      serverBefore === undefined || serverAfter === undefined ? undefined : (serverAfter - serverBefore) / elapsed,
    perGroup: groupCommit && groups > 0 ? (groupsAfter.requests - groupsBefore.requests) / groups : undefined,
  };
}

/** Every acknowledged source is recorded with its rows, and bronze holds exactly those rows for it. */
async function checkNothingLost(pool: Pool, pipeline: string, sources: string[], acknowledged: number): Promise<void> {
  const { rows } = await pool.query(
    `SELECT (SELECT count(*)::int FROM straggler.landed_sources WHERE pipeline = $1 AND source = ANY($2)) AS recorded,
            (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1
                AND source_id IN (SELECT id FROM straggler.bronze_sources WHERE pipeline = $1 AND name = ANY($2))) AS in_bronze,
            (SELECT count(DISTINCT event_id)::int FROM straggler.bronze_events WHERE pipeline = $1
                AND source_id IN (SELECT id FROM straggler.bronze_sources WHERE pipeline = $1 AND name = ANY($2)) AND status = 'accepted') AS distinct_accepted`,
    [pipeline, sources],
  );
  const r = rows[0];
  if (r.recorded !== sources.length || r.in_bronze !== acknowledged || r.distinct_accepted !== acknowledged) {
    throw new Error(
      `${pipeline}: ${sources.length} requests / ${acknowledged} events acknowledged, but ${r.recorded} recorded, ${r.in_bronze} rows in bronze, ${r.distinct_accepted} distinct accepted events`,
    );
  }
}

const pct = (x: number) => `${Math.round(x * 100)} %`;

/** One round as a progress line: throughput, latency and where the CPU went. */
function describe(r: IngestRound): string {
  return (
    `${fmt(r.eventsPerSecond)} events/s, p50 ${r.p50} ms, p99 ${r.p99} ms; CPU: machine ${pct(r.machine)} of 2 cores; ` +
    `bench process ${r.process.toFixed(2)} cores (service loop ${pct(r.service)}, load generator ${pct(r.client)} of a core), database server ${r.server === undefined ? "?" : r.server.toFixed(2)} cores` +
    (r.perGroup === undefined ? "" : `; ${r.perGroup.toFixed(1)} requests per group`)
  );
}

/**
 * 1b. HTTP ingest with group commit beside one transaction per request, `rounds` each, alternating, at 8 connections;
 * then both once at 4, 16 and 32 connections. 10 s per round (× scale, at least 3 s).
 */
export async function measureHttpIngest(ctx: BenchContext): Promise<void> {
  const seconds = Math.max(3, Math.round(10 * Math.min(1, ctx.scale)));
  const group: IngestRound[] = [],
    single: IngestRound[] = [];
  for (let r = 0; r < ctx.rounds; r++) {
    group.push(await ingestRound(ctx, `http-group-${r}`, true, seconds));
    say(`http ingest round ${r}, group commit: ${describe(group[r]!)}`);
    single.push(await ingestRound(ctx, `http-single-${r}`, false, seconds));
    say(`http ingest round ${r}, one transaction per request: ${describe(single[r]!)}`);
  }
  const g = stat(group.map((x) => x.eventsPerSecond)),
    s = stat(single.map((x) => x.eventsPerSecond));
  const gp99 = stat(group.map((x) => x.p99)),
    sp99 = stat(single.map((x) => x.p99));
  const med = (xs: IngestRound[], f: (x: IngestRound) => number) => stat(xs.map(f)).median;
  const cpu = (xs: IngestRound[]) =>
    `CPU: machine ${pct(med(xs, (x) => x.machine))} of 2 cores; bench process ${med(xs, (x) => x.process).toFixed(2)} cores (service loop ${pct(med(xs, (x) => x.service))}, load generator ${pct(med(xs, (x) => x.client))} of a core), ` +
    `database server ${xs.some((x) => x.server === undefined) ? "?" : med(xs, (x) => x.server!).toFixed(2)} cores`;
  ctx.row(
    `HTTP ingest, ${CONNECTIONS} connections × ${EVENTS_PER_REQUEST}-event requests, ${seconds} s (group commit); every acknowledged event in bronze once`,
    `${fmtStat(g, " ev/s")}; p99 ${fmt(gp99.median)} ms (${fmt(gp99.min)}–${fmt(gp99.max)}); ${fmt(stat(group.map((x) => x.perGroup ?? 0)).median)} requests per group; ${cpu(group)}`,
    `one transaction per request ${fmtStat(s, " ev/s")}; p99 ${fmt(sp99.median)} ms (${fmt(sp99.min)}–${fmt(sp99.max)}); ${cpu(single)}`,
    `${(g.median / s.median).toFixed(2)} × per request`,
    "≥ 20,000 ev/s, p99 < 100 ms",
  );
  if (CURVE.length === 0) return;
  const curve: string[] = [],
    curveSingle: string[] = [];
  for (const c of CURVE) {
    const gc = await ingestRound(ctx, `http-group-c${c}`, true, seconds, c);
    say(`http ingest at ${c} connections, group commit: ${describe(gc)}`);
    const sc = await ingestRound(ctx, `http-single-c${c}`, false, seconds, c);
    say(`http ingest at ${c} connections, one transaction per request: ${describe(sc)}`);
    curve.push(
      `${c}: ${fmt(gc.eventsPerSecond)} ev/s, p99 ${fmt(gc.p99)} ms, ${(gc.perGroup ?? 0).toFixed(1)} per group`,
    );
    curveSingle.push(`${c}: ${fmt(sc.eventsPerSecond)} ev/s, p99 ${fmt(sc.p99)} ms`);
  }
  ctx.row(
    `HTTP ingest by connections (${EVENTS_PER_REQUEST}-event requests, ${seconds} s, one round each; group commit)`,
    curve.join("; "),
    `one transaction per request ${curveSingle.join("; ")}`,
    "",
    "",
  );
}
