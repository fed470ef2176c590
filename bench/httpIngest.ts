/**
 * HTTP ingest on the load test's workload (test/integration/load.test.ts):
 * autocannon posts 50-event NDJSON requests on 8 connections to a running
 * service (stream loop included), with group commit and with one
 * transaction per request (`STRAGGLER_GROUP_COMMIT=off`), alternating
 * rounds. Each round checks that nothing was lost: every acknowledged
 * request's events are in bronze, once.
 */
import path from "node:path";
import autocannon from "autocannon";
import type { Pool } from "../src/db/pool.js";
import { startService } from "../src/service.js";
import { benchPipeline, fmt, fmtStat, log, stat, tmp, say, type BenchContext } from "./common.js";

const EVENTS_PER_REQUEST = 50, CONNECTIONS = 8;
const TOKEN = "bench-token-0123456789";

export interface IngestRound { eventsPerSecond: number; p50: number; p99: number; requests: number }

/**
 * One round: `seconds` of load on pipeline `name` through a service started with group commit on or off.
 * @throws Error when a request was not answered 201 or an acknowledged event is not in bronze exactly once
 */
export async function ingestRound(ctx: Pick<BenchContext, "pool" | "url" | "env">, name: string, groupCommit: boolean, seconds: number): Promise<IngestRound> {
  const pipeline = benchPipeline(name, 100_000, path.join(tmp, `${name}-landing`));
  const db = { pool: ctx.pool, url: ctx.url, kind: "external" as const, close: async () => undefined };
  const service = await startService({ ...ctx.env, PORT: 0, STRAGGLER_API_TOKEN: TOKEN, STRAGGLER_GROUP_COMMIT: groupCommit ? "on" : "off" }, db, [pipeline], log);
  const sources: string[] = [];
  let counter = 0, acknowledged = 0;
  let result: autocannon.Result;
  try {
    result = await autocannon({
      url: `http://127.0.0.1:${service.port}`,
      connections: CONNECTIONS,
      duration: seconds,
      requests: [{
        method: "POST",
        path: `/pipelines/${name}/events`,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/x-ndjson" },
        setupRequest: (req) => {
          const now = Date.now(), c = counter++;
          const lines = Array.from({ length: EVENTS_PER_REQUEST }, (_, i) =>
            `{"id":"${name}-${c}-${i}","t":"${new Date(now - ((c * 7 + i * 13) % 40_000)).toISOString()}","k":"k${(c + i) % 20}","v":${(c % 1000) / 100 + i}}`);
          return { ...req, body: lines.join("\n") };
        },
        onResponse: (status, body) => {
          if (status !== 201) return;
          const r = JSON.parse(body) as { landed: number; source: string };
          acknowledged += r.landed;
          sources.push(r.source);
        },
      }],
    });
  } finally {
    await service.stop();
  }
  if (result.non2xx + result.errors + result.timeouts > 0) throw new Error(`${name}: ${result.non2xx} non-2xx answers, ${result.errors} errors, ${result.timeouts} timeouts`);
  await checkNothingLost(ctx.pool, name, sources, acknowledged);
  return { eventsPerSecond: acknowledged / seconds, p50: result.latency.p50, p99: result.latency.p99, requests: sources.length };
}

/** Every acknowledged source is recorded with its rows, and bronze holds exactly those rows for it. */
async function checkNothingLost(pool: Pool, pipeline: string, sources: string[], acknowledged: number): Promise<void> {
  const { rows } = await pool.query(
    `SELECT (SELECT count(*)::int FROM straggler.landed_sources WHERE pipeline = $1 AND source = ANY($2)) AS recorded,
            (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1 AND source = ANY($2)) AS in_bronze,
            (SELECT count(DISTINCT event_id)::int FROM straggler.bronze_events WHERE pipeline = $1 AND source = ANY($2) AND status = 'accepted') AS distinct_accepted`,
    [pipeline, sources],
  );
  const r = rows[0];
  if (r.recorded !== sources.length || r.in_bronze !== acknowledged || r.distinct_accepted !== acknowledged) {
    throw new Error(`${pipeline}: ${sources.length} requests / ${acknowledged} events acknowledged, but ${r.recorded} recorded, ${r.in_bronze} rows in bronze, ${r.distinct_accepted} distinct accepted events`);
  }
}

/** 1b. HTTP ingest with group commit beside one transaction per request, `rounds` each, alternating; 10 s per round (× scale, at least 3 s). */
export async function measureHttpIngest(ctx: BenchContext): Promise<void> {
  const seconds = Math.max(3, Math.round(10 * Math.min(1, ctx.scale)));
  const group: IngestRound[] = [], single: IngestRound[] = [];
  for (let r = 0; r < ctx.rounds; r++) {
    group.push(await ingestRound(ctx, `http-group-${r}`, true, seconds));
    single.push(await ingestRound(ctx, `http-single-${r}`, false, seconds));
    say(`http ingest round ${r}: group commit ${fmt(group[r]!.eventsPerSecond)} events/s (p99 ${group[r]!.p99} ms) vs per request ${fmt(single[r]!.eventsPerSecond)} events/s (p99 ${single[r]!.p99} ms)`);
  }
  const g = stat(group.map((x) => x.eventsPerSecond)), s = stat(single.map((x) => x.eventsPerSecond));
  const gp99 = stat(group.map((x) => x.p99)), sp99 = stat(single.map((x) => x.p99));
  ctx.row(
    `HTTP ingest, ${CONNECTIONS} connections × ${EVENTS_PER_REQUEST}-event requests, ${seconds} s (group commit); every acknowledged event in bronze once`,
    `${fmtStat(g, " ev/s")}; p99 ${fmt(gp99.median)} ms (${fmt(gp99.min)}–${fmt(gp99.max)})`,
    `one transaction per request ${fmtStat(s, " ev/s")}; p99 ${fmt(sp99.median)} ms (${fmt(sp99.min)}–${fmt(sp99.max)})`,
    `${(g.median / s.median).toFixed(2)} × per request`,
    "≥ 20,000 ev/s, p99 < 100 ms",
  );
}
