/**
 * 4. Freshness: POST over HTTP → applied by the stream (the checkpoint's
 * `seq` reaches the answer's `lastSeq`), at ~1k events/s: a producer sending
 * 50 events every 50 ms to a running service.
 */
import path from "node:path";
import pg from "pg";
import { readCheckpoint } from "../src/db/sql/stream/readCheckpoint.js";
import { startService } from "../src/service.js";
import { benchPipeline, fmt, log, now, tmp, type BenchContext } from "./common.js";

const EVENTS_PER_POST = 50,
  POST_EVERY_MS = 50;
const TOKEN = "bench-token-0123456789";

/** Posts for 15 s (× scale, at least 3 s) and reports p50 and p99 of POST → applied. */
export async function measureFreshness(ctx: BenchContext): Promise<void> {
  const pipeline = benchPipeline("fresh", 100_000, path.join(tmp, "fresh-landing"));
  const db = { pool: ctx.pool, url: ctx.url, kind: "external" as const, close: async () => undefined };
  const service = await startService({ ...ctx.env, PORT: 0, STRAGGLER_API_TOKEN: TOKEN }, db, [pipeline], log);
  const latencies: number[] = [];
  const seconds = Math.max(3, Math.round(15 * Math.min(1, ctx.scale)));
  const pending: { sent: number; lastSeq: number }[] = [];
  let stop = false;
  const watcher = (async () => {
    const c = new pg.Client({ connectionString: ctx.url });
    await c.connect();
    while (!stop || pending.length > 0) {
      // A plain client reads bigint as text: Number() below.
      const seq = (await readCheckpoint(c, pipeline.name))?.lastSeq;
      const t = now();
      for (let i = pending.length - 1; i >= 0; i--)
        if (seq !== undefined && Number(seq) >= pending[i]!.lastSeq) latencies.push(t - pending.splice(i, 1)[0]!.sent);
      await new Promise((r) => setTimeout(r, 2));
    }
    await c.end();
  })();
  let n = 0;
  const inFlight: Promise<void>[] = [];
  const end = now() + seconds * 1000;
  while (now() < end) {
    const tick = now();
    const body = Array.from(
      { length: EVENTS_PER_POST },
      () => `{"id":"f${n++}","t":"${new Date().toISOString()}","k":"k${n % 100}","v":1.00}`,
    ).join("\n");
    const sent = now();
    // Not awaited: a request goes out every POST_EVERY_MS whatever the previous one's latency.
    inFlight.push(
      fetch(`http://127.0.0.1:${service.port}/pipelines/fresh/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body,
      })
        .then((res) => res.json() as Promise<{ lastSeq: number }>)
        .then((j) => void pending.push({ sent, lastSeq: j.lastSeq })),
    );
    await new Promise((r) => setTimeout(r, Math.max(0, POST_EVERY_MS - (now() - tick))));
  }
  await Promise.all(inFlight);
  stop = true;
  await watcher;
  await service.stop();
  const sorted = [...latencies].sort((a, b) => a - b);
  const pct = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  // The database it was measured in: every section before this one left its rows in bronze.
  const bronze = (await ctx.pool.query("SELECT count(*)::bigint AS n FROM straggler.bronze_events")).rows[0]
    .n as number;
  ctx.row(
    `freshness at ${fmt(n / seconds)} ev/s (POST → applied), ${latencies.length} requests, bronze holding ${bronze.toLocaleString("en-US")} rows`,
    `p50 ${fmt(pct(0.5))} ms, p99 ${fmt(pct(0.99))} ms`,
    "trigger interval 1,000 ms",
    `p99 = ${(pct(0.99) / 1000).toFixed(2)} × interval`,
    "p50 ≤ 15 ms, p99 < 250 ms",
  );
}
