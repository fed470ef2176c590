/**
 * One scheduled correction, for the system's cron or a Kubernetes CronJob:
 *
 *   node --import tsx jobs/correct.ts [pipeline|all]
 *
 * Runs as trigger `cron` keyed by the current minute, so several hosts
 * running the same crontab correct each pipeline once per minute slot.
 * Exit status: 0 all runs succeeded (or were already run by another host),
 * 1 a run failed, 2 bad configuration or pipeline name.
 */
import { loadEnv } from "../src/config/env.js";
import { ConfigError, loadPipelines } from "../src/config/pipelines.js";
import { runCorrection } from "../src/correction/correct.js";
import { cronSlotOf, logCorrection } from "../src/correction/schedule.js";
import { openDatabase } from "../src/db/open.js";
import { createLogger } from "../src/log.js";

async function main(): Promise<number> {
  const env = loadEnv();
  const log = createLogger(env.LOG_LEVEL);
  const pipelines = loadPipelines(env.STRAGGLER_PIPELINES);
  const name = process.argv[2] ?? "all";
  const chosen = name === "all" ? pipelines : pipelines.filter((p) => p.name === name);
  if (chosen.length === 0) {
    console.error(`jobs/correct: no pipeline named "${name}"; configured: ${pipelines.map((p) => p.name).join(", ")}`);
    return 2;
  }
  const db = await openDatabase(env, log);
  try {
    const slot = cronSlotOf(new Date());
    let failed = false;
    for (const p of chosen) {
      const s = await runCorrection(db.pool, p, { trigger: "cron", cronSlot: slot });
      logCorrection(log, s);
      console.log(`${p.name}: ${s.status}, ${s.windowsChanged} windows changed, ${s.eventsRecovered} late events recovered`);
      failed ||= s.status === "failed";
    }
    return failed ? 1 : 0;
  } finally {
    await db.close();
  }
}

main().then(
  (code) => (process.exitCode = code),
  (e) => {
    console.error(`jobs/correct: ${(e as Error).message}`);
    process.exitCode = e instanceof ConfigError ? 2 : 1;
  },
);
