/**
 * The `straggler` schema's records of the service's own work (DESIGN
 * "Tables"): correction runs and their audit, windows whose aggregate failed,
 * alert states, policy versions, holds (and the results a hold keeps
 * published). The data's own tables are in schema.ts;
 * drizzle-kit reads both (drizzle.config.ts).
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  boolean,
  check,
  doublePrecision,
  index,
  integer,
  jsonb,
  numeric,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import { straggler, tstz } from "./schema.js";

/** One correction run: what triggered it, what it examined and changed, how it ended. */
export const correctionRuns = straggler.table(
  "correction_runs",
  {
    runId: bigserial("run_id", { mode: "number" }).primaryKey(),
    pipeline: text("pipeline").notNull(),
    trigger: text("trigger").notNull(),
    /** For cron runs: the scheduled minute. Unique per pipeline among runs that succeeded or are running, so replicas run each slot once and a failed or abandoned slot can run again. */
    cronSlot: tstz("cron_slot"),
    rangeStart: tstz("range_start"),
    rangeEnd: tstz("range_end"),
    groupKeys: text("group_keys").array(),
    /** `running`, `succeeded`, `failed` or `abandoned` (its lease expired: the process stopped or lost the database). */
    status: text("status").notNull(),
    bronzeSnapshot: bigint("bronze_snapshot", { mode: "number" }),
    windowsExamined: integer("windows_examined"),
    windowsChanged: integer("windows_changed"),
    eventsRecovered: integer("events_recovered"),
    startedAt: tstz("started_at").notNull().defaultNow(),
    finishedAt: tstz("finished_at"),
    durationMs: integer("duration_ms"),
    error: text("error"),
    /** A `running` run renews this while it works; once it has passed, the run is `abandoned` (src/correction/runLease.ts). */
    leaseUntil: tstz("lease_until"),
  },
  (t) => [
    index("correction_runs_pipeline").on(t.pipeline, t.runId),
    uniqueIndex("correction_runs_cron_slot")
      .on(t.pipeline, t.cronSlot)
      .where(sql`cron_slot IS NOT NULL AND status IN ('running', 'succeeded')`),
    index("correction_runs_running")
      .on(t.pipeline, t.leaseUntil)
      .where(sql`status = 'running'`),
  ],
);

/** The audit trail: one row per window a correction changed, before and after. */
export const corrections = straggler.table(
  "corrections",
  {
    runId: bigint("run_id", { mode: "number" }).notNull(),
    pipeline: text("pipeline").notNull(),
    groupKey: text("group_key").notNull(),
    windowStart: tstz("window_start").notNull(),
    windowEnd: tstz("window_end").notNull(),
    revisionBefore: integer("revision_before"),
    revisionAfter: integer("revision_after").notNull(),
    countBefore: bigint("count_before", { mode: "number" }),
    sumBefore: numeric("sum_before"),
    minBefore: numeric("min_before"),
    maxBefore: numeric("max_before"),
    countAfter: bigint("count_after", { mode: "number" }).notNull(),
    sumAfter: numeric("sum_after"),
    minAfter: numeric("min_after"),
    maxAfter: numeric("max_after"),
    lateEventCount: integer("late_event_count").notNull(),
    lateEventIds: text("late_event_ids").array().notNull(),
    correctedAt: tstz("corrected_at").notNull().defaultNow(),
    /** The reconcile run (`reconcile_runs`) that found this window differing from bronze, when that caused the change (migration 0033). */
    reconcileRunId: bigint("reconcile_run_id", { mode: "number" }),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.groupKey, t.windowStart, t.windowEnd] }),
    index("corrections_window").on(t.pipeline, t.groupKey, t.windowStart),
  ],
);

/**
 * Windows whose aggregate failed with a data exception (SQLSTATE class 22, e.g.
 * a sum overflowing numeric): the stream or correction quarantined the rows
 * that caused it and went on. Read through the view `straggler.failed_windows`.
 * `group_key` is stored as everywhere else (`NULL_KEY` for the null group).
 */
export const windowFailures = straggler.table(
  "window_failures",
  {
    failureId: bigserial("failure_id", { mode: "number" }).primaryKey(),
    pipeline: text("pipeline").notNull(),
    groupKey: text("group_key").notNull(),
    windowStart: timestamp("window_start", { withTimezone: true, mode: "string" }).notNull(),
    windowEnd: timestamp("window_end", { withTimezone: true, mode: "string" }).notNull(),
    /** `stream` or `correction`. */
    phase: text("phase").notNull(),
    batchId: bigint("batch_id", { mode: "number" }),
    runId: bigint("run_id", { mode: "number" }),
    sqlstate: text("sqlstate").notNull(),
    error: text("error").notNull(),
    quarantinedRows: integer("quarantined_rows").notNull(),
    failedAt: timestamp("failed_at", { withTimezone: true, mode: "string" }).notNull().defaultNow(),
  },
  (t) => [index("window_failures_pipeline").on(t.pipeline, t.failureId)],
);

/**
 * Alert states (src/observe/alerts.ts, migration 0013): one row per pipeline
 * and alert, written when the state changes, so every process and every
 * restart reads the same state. `value` is what the alert was judged on.
 */
export const alertStates = straggler.table(
  "alert_states",
  {
    pipeline: text("pipeline").notNull(),
    alert: text("alert").notNull(),
    /** `ok` or `firing`. */
    state: text("state").notNull(),
    since: tstz("since").notNull(),
    value: doublePrecision("value"),
  },
  (t) => [
    primaryKey({ name: "alert_states_pkey", columns: [t.pipeline, t.alert] }),
    check("alert_states_state_check", sql`${t.state} IN ('ok', 'firing')`),
  ],
);

/**
 * Policy versions (migration 0014): per pipeline, each results version with
 * the policy that produces it, as canonical JSON (`policy`) and its hash
 * (`policy_version`, which each landing records). At most one version
 * per pipeline is `live`; the others are `candidate` or `retired`.
 */
export const policyVersions = straggler.table(
  "policy_versions",
  {
    pipeline: text("pipeline").notNull(),
    version: integer("version").notNull(),
    state: text("state").notNull(),
    policyVersion: text("policy_version").notNull(),
    policy: text("policy").notNull(),
    createdAt: tstz("created_at").notNull().defaultNow(),
    liveSince: tstz("live_since"),
  },
  (t) => [
    primaryKey({ name: "policy_versions_pkey", columns: [t.pipeline, t.version] }),
    check("policy_versions_version_check", sql`${t.version} > 0`),
    check("policy_versions_state_check", sql`${t.state} IN ('live', 'candidate', 'retired')`),
    uniqueIndex("policy_versions_live")
      .on(t.pipeline)
      .where(sql`state = 'live'`),
  ],
);

/** Holds of a pipeline's published results (migration 0015, src/lifecycle/hold.ts): at most one open (released_at null) per pipeline. */
export const pipelineHolds = straggler.table(
  "pipeline_holds",
  {
    holdId: bigserial("hold_id", { mode: "number" }).primaryKey(),
    pipeline: text("pipeline").notNull(),
    reason: text("reason").notNull(),
    rule: text("rule"),
    trippedBy: jsonb("tripped_by"),
    batchId: bigint("batch_id", { mode: "number" }),
    heldAt: tstz("held_at").notNull().defaultNow(),
    releasedAt: tstz("released_at"),
    releasedAfterBatch: bigint("released_after_batch", { mode: "number" }),
  },
  (t) => [
    check("pipeline_holds_rule_check", sql`${t.rule} IN ('onFutureTs', 'quarantineShare')`),
    uniqueIndex("pipeline_holds_open")
      .on(t.pipeline)
      .where(sql`released_at IS NULL`),
    index("pipeline_holds_pipeline").on(t.pipeline, t.holdId),
  ],
);

/** What `straggler.window_results` served when the open hold of a pipeline began (deleted at its release). */
export const heldWindowResults = straggler.table(
  "held_window_results",
  {
    pipeline: text("pipeline").notNull(),
    holdId: bigint("hold_id", { mode: "number" }).notNull(),
    groupKey: text("group_key"),
    windowStart: tstz("window_start").notNull(),
    windowEnd: tstz("window_end").notNull(),
    eventCount: bigint("event_count", { mode: "number" }).notNull(),
    valueSum: numeric("value_sum"),
    valueMin: numeric("value_min"),
    valueMax: numeric("value_max"),
    valueAvg: numeric("value_avg"),
    status: text("status").notNull(),
    revision: integer("revision").notNull(),
    updatedAt: tstz("updated_at").notNull(),
    awaitingCorrection: boolean("awaiting_correction").notNull(),
    resultsVersion: integer("results_version"),
    policyVersion: text("policy_version"),
  },
  (t) => [index("held_window_results_pipeline_start").on(t.pipeline, t.windowStart)],
);

/**
 * Reconcile runs (migration 0033, docs/continuous-reconcile.md): each scheduled or
 * requested check of final windows against bronze — the slice of event time it
 * checked (`range_start`/`range_end`; null: all time), what it found, how it ended.
 */
export const reconcileRuns = straggler.table(
  "reconcile_runs",
  {
    runId: bigserial("run_id", { mode: "number" }).primaryKey(),
    pipeline: text("pipeline").notNull(),
    /** `cron`, `api` or `cli`. */
    trigger: text("trigger").notNull(),
    /** For cron runs: the scheduled minute; one run per slot across replicas. */
    cronSlot: tstz("cron_slot"),
    /** The configured sample: `all` or a percentage such as `5%`. */
    sample: text("sample").notNull(),
    rangeStart: tstz("range_start"),
    rangeEnd: tstz("range_end"),
    /** `running`, `succeeded` or `failed`. */
    status: text("status").notNull(),
    bronzeSnapshot: bigint("bronze_snapshot", { mode: "number" }),
    watermark: tstz("watermark"),
    windowsChecked: integer("windows_checked"),
    windowsMismatched: integer("windows_mismatched"),
    windowsFailed: integer("windows_failed"),
    ledgerBalanced: boolean("ledger_balanced"),
    error: text("error"),
    startedAt: tstz("started_at").notNull().defaultNow(),
    finishedAt: tstz("finished_at"),
  },
  (t) => [
    index("reconcile_runs_pipeline").on(t.pipeline, t.runId),
    uniqueIndex("reconcile_runs_cron_slot")
      .on(t.pipeline, t.cronSlot)
      .where(sql`cron_slot IS NOT NULL`),
    check("reconcile_runs_status_check", sql`${t.status} IN ('running', 'succeeded', 'failed')`),
  ],
);

/**
 * The windows a reconcile run found differing from bronze (migration 0033): stored and
 * expected aggregates as JSON (`{ count, sum, min, max }`, null: no such window), and the
 * correction run that recomputed the window (`corrected_by`; null: not yet).
 */
export const reconcileMismatches = straggler.table(
  "reconcile_mismatches",
  {
    runId: bigint("run_id", { mode: "number" }).notNull(),
    pipeline: text("pipeline").notNull(),
    groupKey: text("group_key").notNull(),
    windowStart: tstz("window_start").notNull(),
    windowEnd: tstz("window_end").notNull(),
    stored: jsonb("stored"),
    expected: jsonb("expected"),
    correctedBy: bigint("corrected_by", { mode: "number" }),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.groupKey, t.windowStart, t.windowEnd] }),
    index("reconcile_mismatches_open")
      .on(t.pipeline, t.groupKey, t.windowStart)
      .where(sql`corrected_by IS NULL`),
  ],
);
