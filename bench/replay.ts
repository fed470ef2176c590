/**
 * Replays run as the CLI does, in a child process that prints its peak RSS:
 * 6. memory of synthetic replays at 1M and 10M events (× scale), and
 * 7. the public taxi samples replayed as the demo does, then corrected.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { loadPipelines } from "../src/config/pipelines.js";
import { runCorrection } from "../src/correction/correct.js";
import { fmt, fmtStat, ROOT, say, tmp, writeEvents, type BenchContext, type Stat } from "./common.js";

interface ReplayFigures {
  rssMb: number;
  rate: number;
  events: number;
  dropped: number;
  awaiting: number;
}

/** Runs the CLI `replay` as a child with `args` and returns its printed peak RSS (MB), rate and drop counts. */
async function replayChild(url: string, args: string[]): Promise<ReplayFigures> {
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, "bin/straggler.mjs"), ...args], {
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let s = "";
    child.stdout.on("data", (d) => (s += d));
    child.on("exit", (code) => (code === 0 ? resolve(s) : reject(new Error(`replay exited ${code}: ${s}`))));
  });
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? NaN);
  return {
    rssMb: num(/peak RSS: +(\d+) MB/),
    rate: num(/(\d+) rows\/s end to end\)/),
    events: num(/landed: +(\d+)/),
    dropped: num(/dropped by watermark: +(\d+)/),
    awaiting: num(/pairs, in (\d+) windows awaiting correction/),
  };
}

/** Replays a synthetic events file in arrival order (field `a`), one hour of arrival per micro-batch (720k events). */
async function replaySynthetic(url: string, file: string, name: string): Promise<ReplayFigures> {
  const config = path.join(tmp, `${name}.yaml`);
  writeFileSync(
    config,
    `pipelines:\n  - name: ${name}\n    source: { landingDir: ${JSON.stringify(path.dirname(file))}, format: jsonl }\n    fields: { eventId: id, eventTime: t, groupKey: [k], value: v }\n    window: { type: tumbling, size: 10 minutes }\n    watermark: { delay: 10 minutes }\n    trigger: { maxRowsPerBatch: 100000 }\n    admission: { maxFutureSkew: null }\n`,
  );
  return replayChild(url, ["-c", config, "replay", "-p", name, file, "--arrival-field", "a", "--batch-span", "1 hour"]);
}

/** 6. Peak RSS of the replaying process at 1M and 10M events (× scale). */
export async function measureReplayMemory(ctx: BenchContext): Promise<void> {
  const small = Math.round(1_000_000 * ctx.scale),
    big = Math.round(10_000_000 * ctx.scale);
  const memSmall = path.join(tmp, "mem-small", "events.jsonl"),
    memBig = path.join(tmp, "mem-big", "events.jsonl");
  for (const [f, count] of [
    [memSmall, small],
    [memBig, big],
  ] as const) {
    mkdirSync(path.dirname(f), { recursive: true });
    await writeEvents(f, count);
  }
  const rs = await replaySynthetic(ctx.url, memSmall, "mem-small");
  say(`replay ${small}: ${rs.rssMb} MB, ${rs.rate} events/s`);
  const rb = await replaySynthetic(ctx.url, memBig, "mem-big");
  say(`replay ${big}: ${rb.rssMb} MB, ${rb.rate} events/s`);
  ctx.row(
    `peak RSS replaying ${big.toLocaleString("en-US")} events (${fmt(rb.rate)} ev/s)`,
    `${rb.rssMb} MB`,
    `itself at ${small.toLocaleString("en-US")}: ${rs.rssMb} MB (${fmt(rs.rate)} ev/s)`,
    `${(rb.rssMb / rs.rssMb).toFixed(2)} ×`,
    "< 300 MB and flat",
  );
}

/**
 * 7. The public taxi samples, replayed as the demo does (pipelines/pipelines.yaml), then corrected.
 * @param limit plain COPY's rate from the landing section (undefined when it did not run)
 */
export async function measureTaxiReplay(ctx: BenchContext, limit: Stat | undefined): Promise<void> {
  const pipelinesFile = path.join(ROOT, "pipelines/pipelines.yaml");
  const taxi = loadPipelines(pipelinesFile).find((x) => x.name === "nyc-taxi")!;
  const rt = await replayChild(ctx.url, ["-c", pipelinesFile, "replay", "-p", "nyc-taxi"]);
  const tc = await runCorrection(ctx.pool, taxi, { trigger: "cli" });
  say(
    `taxi replay: ${rt.events} events, ${rt.rate} events/s, ${rt.rssMb} MB; correction ${tc.windowsChanged} windows in ${tc.durationMs} ms`,
  );
  ctx.row(
    `replay of nyc-taxi-gx-samples (${fmt(rt.events)} trips in dropoff order, 6-hour micro-batches), then one correction run`,
    `${fmt(rt.rate)} ev/s, peak RSS ${rt.rssMb} MB; ${fmt(rt.dropped)} pairs dropped by the watermark in ${fmt(rt.awaiting)} windows; correction: ${fmt(tc.windowsChanged)} windows in ${fmt(tc.durationMs)} ms`,
    `plain COPY ${limit ? fmtStat(limit, " ev/s") : "not measured"}`,
    limit ? `${(rt.rate / limit.median).toFixed(2)} × limit` : "",
    "≥ 12,000 ev/s, the same counts",
  );
}
