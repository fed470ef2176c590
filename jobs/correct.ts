/**
 * One scheduled correction, for the system's cron or a Kubernetes CronJob:
 *
 *   node --enable-source-maps dist/jobs/correct.js [pipeline|all] [--slot 2026-10-01T12:00:00Z]
 *
 * (this file compiled by `npm run build`; from a checkout without a build: node --import tsx jobs/correct.ts …)
 *
 * Runs as trigger `cron` keyed by the current minute, so several hosts
 * running the same crontab correct each pipeline once per minute slot; a slot
 * whose run failed or was abandoned (its lease expired) runs again on a retry.
 * Exit status (the worst over the pipelines): 0 every run succeeded, or its
 * slot was already run by a run that succeeded ("skipped: correction slot
 * already run"); 3 a slot is being run by another run whose holder is alive
 * ("skipped: correction slot being run by run N …": this job did not do the
 * work, which is not done yet); 1 a run failed or the database could not be
 * reached (each pipeline is still tried); 2 bad configuration, pipeline name
 * or slot. A slot held by a run whose process is gone (its holder lock went
 * with its database session) or whose lease expired is not skipped: that run
 * is marked abandoned and the slot runs. `--slot` runs a given minute's slot
 * instead of the current one (to retry a slot by hand after its minute).
 */
import { Command, CommanderError } from "commander";
import { loadEnv } from "../src/config/env.js";
import { ConfigError, loadPipelines } from "../src/config/pipelines.js";
import { runCorrection } from "../src/correction/correct.js";
import { cronSlotOf, logCorrection, skippedMessage } from "../src/correction/schedule.js";
import { openDatabase } from "../src/db/open.js";
import { createLogger } from "../src/log.js";

/** Exit status when a slot is being run by another live run: skipped, its work not done by this job (README "CLI"). */
const SLOT_HELD_BY_LIVE_RUN = 3;

/** The slot option: an ISO 8601 instant with a zone on a whole minute, as ISO UTC; undefined when invalid. */
function slotOption(text: string): string | undefined {
  const ms = /(Z|[+-]\d\d:?\d\d)$/.test(text) ? Date.parse(text) : NaN;
  return Number.isFinite(ms) && ms % 60_000 === 0 ? new Date(ms).toISOString() : undefined;
}

async function main(): Promise<number> {
  const program = new Command("jobs/correct")
    .argument("[pipeline]", "pipeline, or 'all'", "all")
    .option(
      "--slot <instant>",
      "the scheduled minute to run (ISO 8601 with zone, on a whole minute); default: the current minute",
    )
    .exitOverride()
    .configureOutput({ writeErr: (t) => process.stderr.write(t) });
  try {
    program.parse(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    throw e;
  }
  const name = program.args[0] ?? "all";
  const slotText = program.opts<{ slot?: string }>().slot;
  const slot = slotText === undefined ? cronSlotOf(new Date()) : slotOption(slotText);
  if (slot === undefined) {
    console.error(
      `jobs/correct: --slot: expected an ISO 8601 instant with a zone on a whole minute, such as 2026-10-01T12:00:00Z; got ${JSON.stringify(slotText)}`,
    );
    return 2;
  }
  const env = loadEnv();
  const log = createLogger(env.LOG_LEVEL);
  const pipelines = loadPipelines(env.STRAGGLER_PIPELINES);
  const chosen = name === "all" ? pipelines : pipelines.filter((p) => p.name === name);
  if (chosen.length === 0) {
    console.error(`jobs/correct: no pipeline named "${name}"; configured: ${pipelines.map((p) => p.name).join(", ")}`);
    return 2;
  }
  const db = await openDatabase(env, log);
  try {
    let failed = false;
    let heldByLiveRun = false;
    for (const p of chosen) {
      try {
        const s = await runCorrection(
          db.pool,
          p,
          { trigger: "cron", cronSlot: slot },
          { onPolicyAdopted: (a) => console.log(a.message) },
        );
        logCorrection(log, s);
        if (s.status === "skipped") console.log(`${p.name}: skipped: ${skippedMessage(s)}`);
        else
          console.log(
            `${p.name}: run ${s.runId} ${s.status}, ${s.windowsChanged} windows changed, ${s.eventsRecovered} late events recovered${s.error ? ` — ${s.error}` : ""}`,
          );
        failed ||= s.status === "failed";
        heldByLiveRun ||= s.status === "skipped" && s.heldBy?.status === "running";
      } catch (e) {
        console.error(`jobs/correct: ${p.name}: ${(e as Error).message}`);
        failed = true;
      }
    }
    return failed ? 1 : heldByLiveRun ? SLOT_HELD_BY_LIVE_RUN : 0;
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
