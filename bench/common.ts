/**
 * What every benchmark section shares: the bench's pipeline config, its
 * synthetic events file, medians with their range, number formatting and
 * the run's context (database, scale, rounds, the result table).
 */
import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { Env } from "../src/config/env.js";
import { pipelineSchema } from "../src/config/pipelineSchema.js";
import type { PipelineConfig } from "../src/config/pipelines.js";
import { inChunks } from "../src/db/copyText.js";
import type { Pool } from "../src/db/pool.js";
import { createLogger } from "../src/log.js";
import { events, toJsonLine } from "./workload.js";

/** The repository's root. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const log = createLogger(process.env.LOG_LEVEL ?? "warn");
/** The run's scratch folder (events files, configs, landing folders). */
export const tmp = mkdtempSync(path.join(os.tmpdir(), "straggler-bench-"));

/** Median, min and max of `n` measurements. */
export interface Stat {
  median: number;
  min: number;
  max: number;
  n: number;
}

export const stat = (xs: number[]): Stat => {
  const s = [...xs].sort((a, b) => a - b);
  return {
    median: s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2,
    min: s[0]!,
    max: s[s.length - 1]!,
    n: s.length,
  };
};
/** A figure for the table: whole numbers from 100 up (thousands separated), else 1 or 2 decimals. */
export const fmt = (x: number) => (x >= 100 ? Math.round(x).toLocaleString("en-US") : x.toFixed(x >= 10 ? 1 : 2));
/** `median unit (min–max, n=rounds)`. */
export const fmtStat = (s: Stat, unit = "") => `${fmt(s.median)}${unit} (${fmt(s.min)}–${fmt(s.max)}, n=${s.n})`;
/** Monotonic clock, ms. */
export const now = () => performance.now();
/** A progress line on stderr. */
export const say = (m: string) => process.stderr.write(`[bench] ${m}\n`);

/** What each section receives. */
export interface BenchContext {
  pool: Pool;
  /** Connection URL of the bench database. */
  url: string;
  env: Env;
  /** 1 = 1M events. */
  scale: number;
  rounds: number;
  /** Events in the main workload. */
  n: number;
  /** The peers section's workload sizes, events before `scale` (`--peers-sizes`). */
  peersSizes: number[];
  /** Adds a row to the result table: figure, Straggler, reference, ratio, target. */
  row(...cells: string[]): void;
}

/** The bench pipeline `name`: JSON lines, 10-minute tumbling windows, 10-minute watermark delay. */
export function benchPipeline(name: string, maxRowsPerBatch = 100_000, landingDir = tmp): PipelineConfig {
  return pipelineSchema.parse({
    name,
    source: { landingDir, format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    trigger: { interval: "1 second", maxRowsPerBatch },
    // Synthetic event times from 2026-01-01 land at the wall clock: a future-skew guard would depend on the day the bench runs.
    admission: { maxFutureSkew: null },
  });
}

/** Writes `count` synthetic events (bench/workload.ts) to `file` as JSON lines. */
export async function writeEvents(file: string, count: number): Promise<void> {
  async function* lines() {
    for (const e of events(count)) yield toJsonLine(e);
  }
  await pipe(Readable.from(inChunks(lines())), createWriteStream(file));
}

/** Runs `statements` in turn on a connection of its own to the server of `serverUrl`. */
async function onServer(serverUrl: string, statements: string[]): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    for (const sql of statements) await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/** The database `name` on the server of `serverUrl`, created afresh. @returns its URL */
export async function freshDatabase(serverUrl: string, name: string): Promise<string> {
  await onServer(serverUrl, [`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`, `CREATE DATABASE ${name}`]);
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Drops the database `name` on the server of `serverUrl` (its sessions ended first). */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await onServer(serverUrl, [`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]);
}

/** The peers workload's generator, shared beside the repository (the datasets' folder's sibling). */
export const PEERS_WORKLOAD = path.resolve(ROOT, "..", "shared", "bench", "peers-workload.mjs");

/** Runs `node args…`, resolves its stdout; rejects with its output on a non-zero exit. */
export function runNode(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, LOG_LEVEL: "warn", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "",
      err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${args.slice(0, 3).join(" ")} exited ${code}: ${(err || out).slice(-2000)}`)),
    );
  });
}

/**
 * The peers workload of `n` events (`base` before the bench's scale) in the run's scratch folder, as the issue's
 * correction table has it: 1 % late up to 1M events, then about 10,000 late events (10M: 0.1 %).
 * @returns the CSV file (`id,t,a,k,v`, arrival order) and the late share
 */
export async function peersEvents(base: number, n: number): Promise<{ file: string; late: number }> {
  const dir = path.join(tmp, `peers-${n}`);
  mkdirSync(dir, { recursive: true });
  const late = base <= 1_000_000 ? 0.01 : 0.01 * (1_000_000 / base);
  await runNode([
    PEERS_WORKLOAD,
    "--n",
    String(n),
    "--days",
    "7",
    "--late",
    String(late),
    "--seed",
    "42",
    "--out",
    dir,
  ]);
  return { file: path.join(dir, "events.csv"), late };
}

/** The peers pipeline `name` as a pipelines.yaml; `admission` replaces its admission block (YAML flow). */
export function peersConfig(name: string, admission = "{ maxFutureSkew: null }"): string {
  return `pipelines:\n  - name: ${name}\n    source: { format: csv }\n    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }\n    window: { type: tumbling, size: 10 minutes }\n    watermark: { delay: 10 minutes }\n    trigger: { maxRowsPerBatch: 100000 }\n    admission: ${admission}\n`;
}
