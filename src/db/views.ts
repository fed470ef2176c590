/**
 * The public read model: the views of DESIGN "Views" (created by the
 * migrations in `drizzle/`), declared for drizzle with `.existing()` so it
 * reads them but never generates them. Keys are the views' own column names,
 * as the REST API serves them. Instants come back as ISO 8601 UTC strings
 * with microseconds kept (`parseTimestamptz`), `numeric` as exact decimal
 * strings, `bigint` counts and sequence numbers as numbers. The views that show
 * `group_key` also have `stored_group_key` (migration 0035: the key as stored, for
 * filters that use an index, with `straggler.key_in`), not declared here: the API
 * does not serve it.
 */
import { getViewSelectedFields, type View } from "drizzle-orm";
import {
  bigint,
  boolean,
  customType,
  doublePrecision,
  integer,
  jsonb,
  numeric,
  pgSchema,
  text,
} from "drizzle-orm/pg-core";
import type { InputProgress } from "../core/model.js";
import { parseTimestamptz } from "./pool.js";

const straggler = pgSchema("straggler");

/** `timestamptz` read as ISO 8601 UTC (drizzle's own string mode keeps PostgreSQL's text); written as given (an ISO instant). */
const instant = customType<{ data: string; driverData: string }>({
  dataType: () => "timestamptz",
  fromDriver: parseTimestamptz,
});
const int8 = (name: string) => bigint(name, { mode: "number" });

/** A view's columns less `pipeline`, for reads of one pipeline that answer without it. */
export function columnsBesidesPipeline<V extends View>(view: V): Omit<V["_"]["selectedFields"], "pipeline"> {
  const { pipeline: _pipeline, ...columns } = getViewSelectedFields(view);
  return columns;
}

/** One row per window and key: the current aggregates, status and revision. */
export const windowResults = straggler
  .view("window_results", {
    pipeline: text("pipeline").notNull(),
    group_key: text("group_key"),
    window_start: instant("window_start").notNull(),
    window_end: instant("window_end").notNull(),
    event_count: int8("event_count").notNull(),
    value_sum: numeric("value_sum"),
    value_min: numeric("value_min"),
    value_max: numeric("value_max"),
    value_avg: numeric("value_avg"),
    status: text("status").notNull(),
    revision: integer("revision").notNull(),
    updated_at: instant("updated_at").notNull(),
    awaiting_correction: boolean("awaiting_correction").notNull(),
    /** The live results version of the pipeline (`straggler.results_versions`), null before its first batch. */
    results_version: integer("results_version"),
    /** That version's policy version (hash), as recorded with the landings classified under it. */
    policy_version: text("policy_version"),
    /** True while the pipeline is held: the row is what was published when the hold began. */
    held: boolean("held").notNull(),
  })
  .existing();

/** One row per micro-batch, in Spark's `StreamingQueryProgress` terms. */
export const streamProgress = straggler
  .view("stream_progress", {
    pipeline: text("pipeline").notNull(),
    batch_id: int8("batch_id").notNull(),
    trigger: text("trigger").notNull(),
    timestamp: instant("timestamp").notNull(),
    start_offset: int8("start_offset").notNull(),
    end_offset: int8("end_offset").notNull(),
    num_input_rows: int8("num_input_rows").notNull(),
    num_quarantined_rows: int8("num_quarantined_rows").notNull(),
    input_rows_per_second: doublePrecision("input_rows_per_second"),
    processed_rows_per_second: doublePrecision("processed_rows_per_second"),
    duration_ms: integer("duration_ms").notNull(),
    event_time_min: instant("event_time_min"),
    event_time_max: instant("event_time_max"),
    event_time_avg: instant("event_time_avg"),
    watermark: instant("watermark"),
    next_watermark: instant("next_watermark"),
    num_rows_dropped_by_watermark: int8("num_rows_dropped_by_watermark").notNull(),
    num_late_windows: integer("num_late_windows").notNull(),
    num_rows_updated: integer("num_rows_updated").notNull(),
    num_rows_finalized: integer("num_rows_finalized").notNull(),
    num_rows_total: integer("num_rows_total").notNull(),
    /** Each input's state after the batch (docs/DESIGN.md "Several inputs"); null for batches run before inputs were tracked. */
    inputs: jsonb("inputs").$type<InputProgress[]>(),
  })
  .existing();

/** Quarantined bronze rows, with their reason. */
export const quarantine = straggler
  .view("quarantine", {
    seq: int8("seq").notNull(),
    pipeline: text("pipeline").notNull(),
    event_id: text("event_id").notNull(),
    reason: text("reason").notNull(),
    detail: text("detail"),
    event_time: instant("event_time"),
    ingestion_time: instant("ingestion_time").notNull(),
    source: text("source").notNull(),
    source_line: integer("source_line").notNull(),
    landed_at: instant("landed_at").notNull(),
    raw: text("raw").notNull(),
  })
  .existing();

/** Every source (file, request, stdin, replay micro-batch) with its state. */
export const sources = straggler
  .view("sources", {
    pipeline: text("pipeline").notNull(),
    source: text("source").notNull(),
    kind: text("kind").notNull(),
    state: text("state").notNull(),
    reason: text("reason"),
    size_bytes: int8("size_bytes"),
    mtime: instant("mtime"),
    sha256: text("sha256"),
    rows: integer("rows").notNull(),
    accepted: integer("accepted").notNull(),
    quarantined: integer("quarantined").notNull(),
    landed_bytes: int8("landed_bytes"),
    first_seen: instant("first_seen").notNull(),
    last_seen: instant("last_seen").notNull(),
    state_since: instant("state_since").notNull(),
    landed_at: instant("landed_at"),
  })
  .existing();

/** Windows whose aggregate failed (a data exception); their rows were quarantined. */
export const failedWindows = straggler
  .view("failed_windows", {
    failure_id: int8("failure_id").notNull(),
    pipeline: text("pipeline").notNull(),
    group_key: text("group_key"),
    window_start: instant("window_start").notNull(),
    window_end: instant("window_end").notNull(),
    phase: text("phase").notNull(),
    batch_id: int8("batch_id"),
    run_id: int8("run_id"),
    sqlstate: text("sqlstate").notNull(),
    error: text("error").notNull(),
    quarantined_rows: integer("quarantined_rows").notNull(),
    failed_at: instant("failed_at").notNull(),
  })
  .existing();

/** One row per correction run. */
export const correctionHistory = straggler
  .view("correction_history", {
    run_id: int8("run_id").notNull(),
    pipeline: text("pipeline").notNull(),
    trigger: text("trigger").notNull(),
    cron_slot: instant("cron_slot"),
    range_start: instant("range_start"),
    range_end: instant("range_end"),
    group_keys: text("group_keys").array(),
    status: text("status").notNull(),
    bronze_snapshot: int8("bronze_snapshot"),
    windows_examined: integer("windows_examined"),
    windows_changed: integer("windows_changed"),
    events_recovered: integer("events_recovered"),
    started_at: instant("started_at").notNull(),
    finished_at: instant("finished_at"),
    duration_ms: integer("duration_ms"),
    error: text("error"),
    lease_until: instant("lease_until"),
  })
  .existing();

/** One row per window a correction run changed: the aggregates before and after. */
export const correctionAudit = straggler
  .view("correction_audit", {
    run_id: int8("run_id").notNull(),
    pipeline: text("pipeline").notNull(),
    group_key: text("group_key"),
    window_start: instant("window_start").notNull(),
    window_end: instant("window_end").notNull(),
    revision_before: integer("revision_before"),
    revision_after: integer("revision_after").notNull(),
    count_before: int8("count_before"),
    sum_before: numeric("sum_before"),
    min_before: numeric("min_before"),
    max_before: numeric("max_before"),
    count_after: int8("count_after").notNull(),
    sum_after: numeric("sum_after"),
    min_after: numeric("min_after"),
    max_after: numeric("max_after"),
    late_event_count: integer("late_event_count").notNull(),
    late_event_ids: text("late_event_ids").array().notNull(),
    corrected_at: instant("corrected_at").notNull(),
    /** The reconcile run whose mismatch caused this change (docs/continuous-reconcile.md); null otherwise. */
    reconcile_run_id: int8("reconcile_run_id"),
  })
  .existing();

/**
 * Session rows removed from the results (session windows: extended or merged by the stream,
 * replaced by a correction run), in the order they were removed: follow it by `id`.
 */
export const retractions = straggler
  .view("retractions", {
    id: int8("id").notNull(),
    pipeline: text("pipeline").notNull(),
    group_key: text("group_key"),
    window_start: instant("window_start").notNull(),
    window_end: instant("window_end").notNull(),
    event_count: int8("event_count").notNull(),
    value_sum: numeric("value_sum"),
    value_min: numeric("value_min"),
    value_max: numeric("value_max"),
    revision: integer("revision").notNull(),
    was_final: boolean("was_final").notNull(),
    reason: text("reason").notNull(),
    batch_id: int8("batch_id"),
    run_id: int8("run_id"),
    replaced_by_start: instant("replaced_by_start"),
    replaced_by_end: instant("replaced_by_end"),
    retracted_at: instant("retracted_at").notNull(),
  })
  .existing();
