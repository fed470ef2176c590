/**
 * The `straggler` schema (DESIGN "Tables"). drizzle-kit generates the
 * migrations in `drizzle/` from this file; views live in a custom migration.
 * Instants are `timestamptz` (microseconds, PostgreSQL's full precision), values `numeric`, sequence numbers `bigint`.
 */
import { sql } from "drizzle-orm";
import { bigint, bigserial, boolean, check, doublePrecision, index, integer, jsonb, numeric, pgSchema, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

export const straggler = pgSchema("straggler");

/** `timestamptz` without a declared precision: PostgreSQL's full precision, microseconds (as the migrations create it). */
const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "string" });

/** The raw ledger: every landed record, accepted or quarantined. Immutable. */
export const bronzeEvents = straggler.table(
  "bronze_events",
  {
    seq: bigserial("seq", { mode: "number" }).primaryKey(),
    pipeline: text("pipeline").notNull(),
    eventId: text("event_id").notNull(),
    raw: text("raw").notNull(),
    eventTime: tstz("event_time"),
    ingestionTime: tstz("ingestion_time").notNull(),
    groupKey: text("group_key").notNull(),
    value: numeric("value"),
    status: text("status").notNull(),
    reason: text("reason"),
    detail: text("detail"),
    policyVersion: text("policy_version").notNull(),
    source: text("source").notNull(),
    sourceLine: integer("source_line").notNull(),
    landedAt: tstz("landed_at").notNull().defaultNow(),
  },
  (t) => [
    index("bronze_events_pipeline_seq").on(t.pipeline, t.seq),
    // Not partial: a partial `status = 'accepted'` index here would match every
    // stream query's predicate and, before the first ANALYZE, be picked to scan
    // a pipeline's whole history instead of its sequence range.
    index("bronze_events_pipeline_event_time").on(t.pipeline, t.eventTime),
    // Corrections read one key's events of one window.
    index("bronze_events_pipeline_key_event_time").on(t.pipeline, t.groupKey, t.eventTime),
    // Dedupe probe: is an accepted row with this event id at a lower seq in this
    // pipeline? event_id leads, so no other index can serve the probe (see the
    // landing's DEDUPE_SQL); pipeline and seq are read from the index itself.
    index("bronze_events_accepted_event_id_seq").on(t.eventId, t.pipeline, t.seq).where(sql`status = 'accepted'`),
  ],
);

/** Which files / requests / replay batches have landed, so each lands exactly once. */
export const landedSources = straggler.table(
  "landed_sources",
  {
    pipeline: text("pipeline").notNull(),
    source: text("source").notNull(),
    sha256: text("sha256").notNull(),
    rows: integer("rows").notNull(),
    accepted: integer("accepted").notNull(),
    quarantined: integer("quarantined").notNull(),
    firstSeq: bigint("first_seq", { mode: "number" }),
    lastSeq: bigint("last_seq", { mode: "number" }),
    landedAt: tstz("landed_at").notNull().defaultNow(),
    /** HTTP landings: SHA-256 (hex) of the request body after Content-Encoding is removed (Idempotency-Key check). */
    requestSha256: text("request_sha256"),
    /** Quarantined rows by reason, as first answered. */
    byReason: jsonb("by_reason").$type<Record<string, number>>(),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.source] })],
);

/**
 * What became of every file a pipeline has seen (view `straggler.sources`):
 * state `landed`, `refused` (with `reason`), `changed_after_landing` or
 * `waiting_to_settle`; size, modification time and SHA-256 of its bytes as
 * last read; for append-only files the bytes and lines landed so far.
 */
export const sourceFiles = straggler.table(
  "source_files",
  {
    pipeline: text("pipeline").notNull(),
    name: text("name").notNull(),
    state: text("state").notNull(),
    reason: text("reason"),
    sizeBytes: bigint("size_bytes", { mode: "number" }),
    mtime: tstz("mtime"),
    sha256: text("sha256"),
    configHash: text("config_hash"),
    landedBytes: bigint("landed_bytes", { mode: "number" }).notNull().default(0),
    landedLines: integer("landed_lines").notNull().default(0),
    rows: integer("rows").notNull().default(0),
    accepted: integer("accepted").notNull().default(0),
    quarantined: integer("quarantined").notNull().default(0),
    firstSeen: tstz("first_seen").notNull().defaultNow(),
    lastSeen: tstz("last_seen").notNull().defaultNow(),
    stateSince: tstz("state_since").notNull().defaultNow(),
    landedAt: tstz("landed_at"),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.name] }), check("source_files_state", sql`${t.state} IN ('landed', 'refused', 'changed_after_landing', 'waiting_to_settle')`)],
);

/** Per pipeline: the stream's committed position and watermark. */
export const checkpoints = straggler.table("checkpoints", {
  pipeline: text("pipeline").primaryKey(),
  batchId: bigint("batch_id", { mode: "number" }).notNull().default(-1),
  lastOffset: bigint("last_offset", { mode: "number" }).notNull().default(0),
  maxEventTime: tstz("max_event_time"),
  watermark: tstz("watermark"),
  updatedAt: tstz("updated_at").notNull().defaultNow(),
});

/** Gold: one row per (pipeline, group key, window). */
export const windowResultsTable = straggler.table(
  "window_results_table",
  {
    pipeline: text("pipeline").notNull(),
    groupKey: text("group_key").notNull(),
    windowStart: tstz("window_start").notNull(),
    windowEnd: tstz("window_end").notNull(),
    eventCount: bigint("event_count", { mode: "number" }).notNull(),
    valueSum: numeric("value_sum"),
    valueMin: numeric("value_min"),
    valueMax: numeric("value_max"),
    isFinal: boolean("is_final").notNull().default(false),
    revision: integer("revision").notNull().default(1),
    corrected: boolean("corrected").notNull().default(false),
    lastBatchId: bigint("last_batch_id", { mode: "number" }),
    createdAt: tstz("created_at").notNull().defaultNow(),
    updatedAt: tstz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.pipeline, t.groupKey, t.windowStart, t.windowEnd] }),
    index("window_results_open_end").on(t.pipeline, t.windowEnd).where(sql`NOT is_final`),
    index("window_results_pipeline_start").on(t.pipeline, t.windowStart),
  ],
);

/** One row per micro-batch: Spark's StreamingQueryProgress fields that apply. */
export const batchProgress = straggler.table(
  "batch_progress",
  {
    pipeline: text("pipeline").notNull(),
    batchId: bigint("batch_id", { mode: "number" }).notNull(),
    trigger: text("trigger").notNull(),
    startOffset: bigint("start_offset", { mode: "number" }).notNull(),
    endOffset: bigint("end_offset", { mode: "number" }).notNull(),
    numInputRows: bigint("num_input_rows", { mode: "number" }).notNull(),
    numQuarantinedRows: bigint("num_quarantined_rows", { mode: "number" }).notNull(),
    inputRowsPerSecond: doublePrecision("input_rows_per_second"),
    processedRowsPerSecond: doublePrecision("processed_rows_per_second"),
    durationMs: integer("duration_ms").notNull(),
    eventTimeMin: tstz("event_time_min"),
    eventTimeMax: tstz("event_time_max"),
    eventTimeAvg: tstz("event_time_avg"),
    watermark: tstz("watermark"),
    nextWatermark: tstz("next_watermark"),
    numRowsDroppedByWatermark: bigint("num_rows_dropped_by_watermark", { mode: "number" }).notNull(),
    numLateWindows: integer("num_late_windows").notNull(),
    numRowsUpdated: integer("num_rows_updated").notNull(),
    numRowsFinalized: integer("num_rows_finalized").notNull(),
    numRowsTotal: integer("num_rows_total").notNull(),
    timestamp: tstz("timestamp").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.batchId] })],
);

/** Windows that dropped late (event, window) pairs and await correction. */
export const lateWindows = straggler.table(
  "late_windows",
  {
    pipeline: text("pipeline").notNull(),
    groupKey: text("group_key").notNull(),
    windowStart: tstz("window_start").notNull(),
    windowEnd: tstz("window_end").notNull(),
    droppedRows: bigint("dropped_rows", { mode: "number" }).notNull(),
    maxSeq: bigint("max_seq", { mode: "number" }).notNull(),
    firstBatchId: bigint("first_batch_id", { mode: "number" }).notNull(),
    lastBatchId: bigint("last_batch_id", { mode: "number" }).notNull(),
    registeredAt: tstz("registered_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.groupKey, t.windowStart, t.windowEnd] })],
);

/** Every dropped (event, window) pair: which late events a correction recovers. */
export const lateEvents = straggler.table(
  "late_events",
  {
    pipeline: text("pipeline").notNull(),
    seq: bigint("seq", { mode: "number" }).notNull(),
    groupKey: text("group_key").notNull(),
    windowStart: tstz("window_start").notNull(),
    windowEnd: tstz("window_end").notNull(),
    batchId: bigint("batch_id", { mode: "number" }).notNull(),
  },
  // Keyed by window first: corrections read and clear one window's late events.
  // (A key led by seq would match every `seq <= snapshot` filter and, before
  // the first ANALYZE, be picked to scan the whole table once per window.)
  (t) => [primaryKey({ columns: [t.pipeline, t.groupKey, t.windowStart, t.windowEnd, t.seq] })],
);

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
    uniqueIndex("correction_runs_cron_slot").on(t.pipeline, t.cronSlot).where(sql`cron_slot IS NOT NULL AND status IN ('running', 'succeeded')`),
    index("correction_runs_running").on(t.pipeline, t.leaseUntil).where(sql`status = 'running'`),
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
  },
  (t) => [primaryKey({ columns: [t.runId, t.groupKey, t.windowStart, t.windowEnd] }), index("corrections_window").on(t.pipeline, t.groupKey, t.windowStart)],
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
  (t) => [primaryKey({ name: "alert_states_pkey", columns: [t.pipeline, t.alert] }), check("alert_states_state_check", sql`${t.state} IN ('ok', 'firing')`)],
);

/**
 * Policy versions (migration 0014): per pipeline, each results version with
 * the policy that produces it, as canonical JSON (`policy`) and its hash
 * (`policy_version`, which bronze rows are stamped with). At most one version
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
    uniqueIndex("policy_versions_live").on(t.pipeline).where(sql`state = 'live'`),
  ],
);
