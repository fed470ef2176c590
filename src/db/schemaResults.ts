/**
 * The `straggler` schema's stream results (DESIGN "Tables"): each pipeline's checkpoint, the window
 * results (gold), the progress of every micro-batch, the late windows and late events that await
 * correction, and the session rows retracted. The ledger they are computed from is in schema.ts;
 * drizzle-kit reads every schema file (drizzle.config.ts).
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
} from "drizzle-orm/pg-core";
import { straggler, tstz } from "./schema.js";

/** Per pipeline: the stream's committed position and watermark. */
export const checkpoints = straggler.table("checkpoints", {
  pipeline: text("pipeline").primaryKey(),
  batchId: bigint("batch_id", { mode: "number" }).notNull().default(-1),
  lastOffset: bigint("last_offset", { mode: "number" }).notNull().default(0),
  maxEventTime: tstz("max_event_time"),
  watermark: tstz("watermark"),
  updatedAt: tstz("updated_at").notNull().defaultNow(),
  /** Each input's state: `[{ input, maxEventTime, watermark, lastIngestionTime }]` (ISO 8601); null before inputs were tracked. */
  inputs: jsonb("inputs"),
});

/**
 * Gold: one row per (pipeline, results version, group key, window). Every version's windows (live, candidate,
 * retired) are here under their number; the live one is `straggler.results_version(pipeline)` (policy_versions'
 * live row, 0 before one is recorded), so a cutover moves a pointer and copies no window (drizzle/0051).
 */
export const windowResultsTable = straggler.table(
  "window_results_table",
  {
    pipeline: text("pipeline").notNull(),
    version: integer("version").notNull(),
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
    primaryKey({
      name: "window_results_table_pkey",
      columns: [t.pipeline, t.version, t.groupKey, t.windowStart, t.windowEnd],
    }),
    index("window_results_open_end")
      .on(t.pipeline, t.version, t.windowEnd)
      .where(sql`NOT is_final`),
    index("window_results_pipeline_start").on(t.pipeline, t.version, t.windowStart),
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
    /** The inputs' state after the batch: `[{ input, maxEventTime, watermark, lastIngestionTime, idle }]` (instants ISO 8601). */
    inputs: jsonb("inputs"),
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
    /** The event's id, as bronze holds it (drizzle/0049_late_event_ids.sql): the correction's audit names the late events by it. */
    eventId: text("event_id"),
  },
  // Keyed by window first: corrections read and clear one window's late events.
  // (A key led by seq would match every `seq <= snapshot` filter and, before
  // the first ANALYZE, be picked to scan the whole table once per window.)
  (t) => [primaryKey({ columns: [t.pipeline, t.groupKey, t.windowStart, t.windowEnd, t.seq] })],
);

/**
 * Session windows: every results row the stream (an event extended or merged sessions) or a
 * correction run (sessions merged or split) removed, with why and by which batch or run, and the
 * row that replaced it. Read through the view `straggler.retractions`, followed by `id`.
 */
export const sessionRetractions = straggler.table(
  "session_retractions",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    pipeline: text("pipeline").notNull(),
    groupKey: text("group_key").notNull(),
    windowStart: tstz("window_start").notNull(),
    windowEnd: tstz("window_end").notNull(),
    eventCount: bigint("event_count", { mode: "number" }).notNull(),
    valueSum: numeric("value_sum"),
    valueMin: numeric("value_min"),
    valueMax: numeric("value_max"),
    revision: integer("revision").notNull(),
    wasFinal: boolean("was_final").notNull(),
    reason: text("reason").notNull(),
    batchId: bigint("batch_id", { mode: "number" }),
    runId: bigint("run_id", { mode: "number" }),
    replacedByStart: tstz("replaced_by_start"),
    replacedByEnd: tstz("replaced_by_end"),
    retractedAt: tstz("retracted_at").notNull().defaultNow(),
  },
  (t) => [
    index("session_retractions_pipeline_id").on(t.pipeline, t.id),
    // A new retraction prunes the ones it covers: the key's removed rows inside its replacement (migration 0028).
    index("session_retractions_key_start").on(t.pipeline, t.groupKey, t.windowStart),
    check("session_retractions_reason_check", sql`${t.reason} IN ('extended', 'merged', 'corrected')`),
    check(
      "session_retractions_check",
      sql`(${t.reason} = 'corrected') = (${t.runId} IS NOT NULL) AND (${t.reason} = 'corrected') = (${t.batchId} IS NULL)`,
    ),
  ],
);
