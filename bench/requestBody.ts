/**
 * `node --import tsx bench/requestBody.ts [--mb 15]`: one large JSON array
 * POSTed to the API in this process, measured as the service sees it: the
 * event loop's longest stall (`perf_hooks.monitorEventLoopDelay`, and a 10 ms
 * ticker's longest gap), the process's peak RSS, and the request's duration.
 * Uses a fresh database `straggler_bench_body` on DATABASE_URL (required).
 * Prints the figures; asserts nothing.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Command } from "commander";
import pg from "pg";
import { pipelineSchema } from "../src/config/pipelineSchema.js";
import { runMigrations } from "../src/db/migrate.js";
import { createPool } from "../src/db/pool.js";
import { createApp } from "../src/app.js";
import { createLogger } from "../src/log.js";

const opts = new Command().option("--mb <n>", "body size, MB", "15").parse().opts<{ mb: string }>();
const url = process.env.DATABASE_URL;
if (!url) throw new Error("set DATABASE_URL");
const DB = "straggler_bench_body";
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin.query(`CREATE DATABASE ${DB}`);
const dbUrl = new URL(url);
dbUrl.pathname = `/${DB}`;
const pool = createPool(dbUrl.toString());
await runMigrations(pool);

const p = pipelineSchema.parse({
  name: "body",
  source: { landingDir: "unused", format: "jsonl" },
  fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "10 minutes" },
});
const TOKEN = "bench-token-0123456789abcdef";
const app = createApp({
  pool,
  pipelines: [p],
  log: createLogger("warn"),
  token: TOKEN,
  maxBodyBytes: 64 * 1024 * 1024,
});
const server = await new Promise<import("node:http").Server>((r) => {
  const s = app.listen(0, "127.0.0.1", () => r(s));
});
const port = (server.address() as import("node:net").AddressInfo).port;

// A JSON array of events of ~100 bytes each, as a producer would send it.
const target = Number(opts.mb) * 1_000_000;
const parts: string[] = [];
let size = 2;
for (let i = 0; size < target; i++) {
  const e = `{"id":"e${i}","t":"2026-01-01T00:${String(Math.floor(i / 60) % 60).padStart(2, "0")}:${String(i % 60).padStart(2, "0")}Z","k":"k${i % 100}","v":${(i % 100_000) / 100}}`;
  parts.push(e);
  size += e.length + 1;
}
const body = Buffer.from(`[${parts.join(",")}]`);
parts.length = 0;

const rssBefore = process.resourceUsage().maxRSS / 1024;
const loop = monitorEventLoopDelay({ resolution: 10 });
let lastTick = performance.now();
let maxGap = 0;
const ticker = setInterval(() => {
  const t = performance.now();
  maxGap = Math.max(maxGap, t - lastTick);
  lastTick = t;
}, 10);
loop.enable();
const started = performance.now();
const r = await fetch(`http://127.0.0.1:${port}/pipelines/body/events`, {
  method: "POST",
  headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
  body,
});
const answer = (await r.json()) as { landed?: number };
const elapsed = performance.now() - started;
loop.disable();
clearInterval(ticker);
const peakRss = process.resourceUsage().maxRSS / 1024;
console.log(
  `[body] ${(body.length / 1e6).toFixed(1)} MB JSON array, ${answer.landed} events: status ${r.status} in ${(elapsed / 1000).toFixed(2)} s; ` +
    `event loop: longest stall ${(loop.max / 1e6).toFixed(0)} ms (ticker gap ${maxGap.toFixed(0)} ms), p99 ${(loop.percentile(99) / 1e6).toFixed(0)} ms; ` +
    `peak RSS ${peakRss.toFixed(0)} MB (${rssBefore.toFixed(0)} MB before the request)`,
);
await new Promise<void>((res) => server.close(() => res()));
await pool.end();
await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin.end();
