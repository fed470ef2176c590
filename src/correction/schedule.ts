/**
 * Scheduled corrections inside the service (node-cron). Each run is keyed by
 * its scheduled minute (`cron_slot`, unique per pipeline among runs that
 * succeeded or are running), so with several replicas each slot runs once and
 * a failed or abandoned slot can run again; `noOverlap` keeps a slow run from
 * overlapping the next tick in this process. `stop()` awaits runs in flight.
 * Expressions have 5 fields (config validation refuses a seconds field).
 */
import cron, { type ScheduledTask } from "node-cron";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import { type PolicyAdoption, PolicyRefusedError, TimeZoneRefusedError } from "../guards/index.js";
import { runCorrection, type CorrectionSummary } from "./correct.js";

/** The scheduled minute of a tick, ISO 8601 UTC. */
export function cronSlotOf(date: Date): string {
  const d = new Date(date.getTime());
  d.setUTCSeconds(0, 0);
  return d.toISOString();
}

/** Why a cron run was skipped, in words: the run that holds its slot. */
export function skippedMessage(s: CorrectionSummary): string {
  const h = s.heldBy;
  if (!h) return "correction slot held by another run";
  return h.status === "succeeded"
    ? `correction slot already run: run ${h.runId} succeeded`
    : `correction slot being run by run ${h.runId} (its holder's session is alive; lease until ${h.leaseUntil}): not done yet`;
}

/** Logs the adoption of a configured policy by a batch or run's policy guard (src/guards/policy.ts), at warn: the results' policy changed. */
export function logPolicyAdopted(log: Logger, a: PolicyAdoption): void {
  log.warn({ pipeline: a.pipeline, resultsVersion: a.version, from: a.from, to: a.to, changes: a.changes }, a.message);
}

/** Logs a run's summary: error for `failed`, info otherwise. */
export function logCorrection(log: Logger, s: CorrectionSummary): void {
  const fields = {
    pipeline: s.pipeline,
    runId: s.runId,
    trigger: s.trigger,
    windowsExamined: s.windowsExamined,
    windowsChanged: s.windowsChanged,
    eventsRecovered: s.eventsRecovered,
    durationMs: s.durationMs,
  };
  if (s.status === "failed") log.error({ ...fields, error: s.error }, "correction run failed");
  else if (s.status === "skipped") log.info({ ...fields, heldBy: s.heldBy }, skippedMessage(s));
  else log.info(fields, "correction run finished");
}

/**
 * Schedules every pipeline with a `correction.schedule` (5-field cron expression, the process's time zone).
 * @returns `stop()`, which stops the schedules and awaits the runs in flight
 */
export function scheduleCorrections(pool: Pool, pipelines: PipelineConfig[], log: Logger): { stop(): Promise<void> } {
  return scheduleEach(
    pipelines,
    "correction",
    (p) => p.correction.schedule,
    (pipeline, cronSlot) =>
      runCorrection(pool, pipeline, { trigger: "cron", cronSlot }, { onPolicyAdopted: (a) => logPolicyAdopted(log, a) })
        .then((s) => logCorrection(log, s))
        .catch((e) => {
          // A refused policy is a known state: a warning each tick, no failed run.
          if (e instanceof PolicyRefusedError)
            log.warn({ pipeline: pipeline.name, changes: e.changes.map((c) => c.text) }, e.message);
          else if (e instanceof TimeZoneRefusedError)
            log.warn({ pipeline: pipeline.name, timeZone: e.timeZone }, e.message);
          else
            log.error(
              { err: e, pipeline: pipeline.name },
              "correction run could not start or record its outcome (database unreachable)",
            );
        }),
    (pipeline, expr) => log.info({ pipeline: pipeline.name, schedule: expr }, "correction scheduled"),
  );
}

/**
 * The service's cron loop, shared by the correction and reconcile schedules: `tick(pipeline,
 * cronSlot)` on every pipeline's expression that `expressionOf` gives (5 fields, the process's time
 * zone; pipelines without one are left out), as node-cron tasks named `<kind>:<pipeline>` with
 * `noOverlap`. `tick` handles its own failures (it must not reject).
 * @param cronSlot given to `tick`: the scheduled minute, ISO 8601 UTC (`cronSlotOf`)
 * @returns `stop()`, which stops the schedules and awaits the ticks in flight
 */
export function scheduleEach(
  pipelines: PipelineConfig[],
  kind: string,
  expressionOf: (p: PipelineConfig) => string | undefined,
  tick: (p: PipelineConfig, cronSlot: string) => Promise<void>,
  onScheduled: (p: PipelineConfig, expr: string) => void,
): { stop(): Promise<void> } {
  const tasks: ScheduledTask[] = [];
  const inFlight = new Set<Promise<unknown>>();
  for (const pipeline of pipelines) {
    const expr = expressionOf(pipeline);
    if (!expr) continue;
    const task = cron.schedule(
      expr,
      async (ctx) => {
        const run = tick(pipeline, cronSlotOf(ctx.date));
        inFlight.add(run);
        await run;
        inFlight.delete(run);
      },
      { name: `${kind}:${pipeline.name}`, noOverlap: true },
    );
    tasks.push(task);
    onScheduled(pipeline, expr);
  }
  return {
    async stop() {
      await Promise.all(tasks.map((t) => t.stop()));
      await Promise.all(inFlight);
    },
  };
}
